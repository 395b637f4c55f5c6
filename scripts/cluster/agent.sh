#!/usr/bin/env bash
# The "ssh" Open MPI's rsh launcher calls (--mca plm_rsh_agent) on an emulated cluster:
#   agent.sh [options] HOST COMMAND...
# runs COMMAND in HOST's node namespace. Open MPI passes the cluster name in ETH_CLUSTER (set by
# mpirun.sh; the agent inherits mpirun's environment, and so do the daemons and ranks it starts).
# Each node gets its own UTS namespace and hostname: Open MPI names its shared-memory segments by
# hostname, and two emulated nodes with one name collide (vader then segfaults).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/cluster_env.sh"
while [[ $1 == -* ]]; do shift; done   # ssh-style options, if Open MPI adds any
host=$1
shift
node=$(( ${host##*.} - 1 ))
exec ip netns exec "$(node_ns "$ETH_CLUSTER" "$node")" \
  unshare --uts bash -c "hostname $(node_host "$ETH_CLUSTER" "$node"); $*"

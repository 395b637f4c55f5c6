#!/usr/bin/env bash
# mpirun across the nodes of an emulated cluster (up.sh): runs mpirun in the head namespace with
# the cluster's hosts, the agent that starts daemons inside node namespaces, and TCP restricted
# to the cluster's network, so ranks of one node use shared memory (vader) and ranks of
# different nodes real TCP through the rated NICs.
#   mpirun.sh NAME [--topology FILE] MPIRUN_ARGS...
# Ranks fill node 0 first, then node 1, ... (rank r is the r-th device, as topologies say):
# declared node i of the cluster's topology.yaml, or of --topology FILE, runs on emulated node i
# with as many ranks as it declares (the random-plan test varies node sizes).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/cluster_env.sh"
name=$1
shift
dir=$(cluster_dir "$name")
[ -f "$dir/hosts" ] || { echo "mpirun.sh: no cluster $name (scripts/cluster/up.sh)" >&2; exit 1; }

mapfile -t hosts < "$dir/hosts"
topology=$dir/topology.yaml
if [ "${1:-}" = "--topology" ]; then
  topology=$2
  shift 2
fi
mapfile -t sizes < <(/usr/bin/python3 "$here/node_sizes.py" "$topology")
[ "${#sizes[@]}" -le "${#hosts[@]}" ] || { echo "mpirun.sh: ${#sizes[@]} nodes declared, cluster $name has ${#hosts[@]}" >&2; exit 1; }
hostlist=""
for i in "${!sizes[@]}"; do hostlist+="${hostlist:+,}${hosts[$i]}:${sizes[$i]}"; done

export ETH_CLUSTER=$name
# Yield when idle: more ranks than cores, and ranks spinning in MPI waits starve the TCP progress
# of the others (ENVIRONMENT-NOTES: an 8-rank step took 7 s instead of 1.1 s). From the
# environment, so that a caller's own --mca mpi_yield_when_idle does not clash with it.
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
# plm_rsh_no_tree_spawn: every daemon starts from the head, through the agent.
exec ip netns exec "$(head_ns "$name")" mpirun --host "$hostlist" --map-by slot --bind-to none \
  --mca plm_rsh_agent "$here/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
  --mca oob_tcp_if_include "$CLUSTER_NET.0/24" --mca btl self,vader,tcp --mca btl_tcp_if_include "$CLUSTER_NET.0/24" "$@"

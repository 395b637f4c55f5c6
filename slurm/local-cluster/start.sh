#!/usr/bin/env bash
# Starts a Slurm cluster on this machine for the tests, with its state in DIR, as root (munged
# unless running, as user munge; the Slurm daemons as root). Two shapes:
#   source slurm/local-cluster/start.sh DIR
#     one node, localhost (this host), in partition `local`;
#   source slurm/local-cluster/start.sh DIR --nodes-from NAME [--partition P=I,J ...]
#     one slurmd per node of the emulated cluster NAME (scripts/cluster/up.sh), each in its
#     node's network namespace under the node's hostname, slurmctld in the head namespace.
#     Partition P holds nodes I,J (the first partition named is the default; without any, one
#     partition `all`). Clients run in the head namespace: nsenter --net="$ETH_SLURM_NETNS" sbatch ...
# Exports SLURM_CONF and ETH_SLURM_NETNS (empty for one node); stop.sh DIR ends it.
# Returns once every node is idle (at most 30 s). Ports 6917/6918 unless ETH_SLURM_PORT is set.
eth_slurm_start() {
  local dir=$1 here cluster="" partitions=()
  shift
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  while [ $# -gt 0 ]; do
    case $1 in
      --nodes-from) cluster=$2 ;;
      --partition) partitions+=("$2") ;;
      *) echo "slurm/local-cluster/start.sh: unknown option $1 (expected --nodes-from, --partition)" >&2; return 2 ;;
    esac
    shift 2
  done
  local hosts=(localhost) addrs=(127.0.0.1) ctld_host=localhost
  export ETH_SLURM_NETNS=""
  if [ -n "$cluster" ]; then
    source "$here/../../scripts/cluster/cluster_env.sh"
    local i hostfile
    hostfile=$(cluster_dir "$cluster")/hosts
    [ -f "$hostfile" ] || { echo "slurm/local-cluster/start.sh: no emulated cluster $cluster ($hostfile)" >&2; return 1; }
    mapfile -t addrs < "$hostfile"
    hosts=()
    for i in "${!addrs[@]}"; do hosts+=("$(node_host "$cluster" "$i")"); done
    ctld_host="$cluster-head($CLUSTER_NET.254)"
    ETH_SLURM_NETNS=/run/netns/$(head_ns "$cluster")
    [ ${#partitions[@]} -gt 0 ] || partitions=("all=$(seq -s, 0 $((${#addrs[@]} - 1)))")
  else
    [ ${#partitions[@]} -eq 0 ] || { echo "slurm/local-cluster/start.sh: --partition needs --nodes-from" >&2; return 2; }
    partitions=(local=0)
  fi

  mkdir -p "$dir/state" "$dir/spool" "$dir/pmix"
  local port=${ETH_SLURM_PORT:-6917} p n nodes ids default=YES
  {
    sed -e "s#@DIR@#$dir#g" -e "s#@CTLD_HOST@#$ctld_host#g" -e "s#@PORT@#$port#g" -e "s#@SLURMD_PORT@#$((port + 1))#g" \
      "$here/slurm.conf.in"
    for i in "${!hosts[@]}"; do
      echo "NodeName=${hosts[$i]} NodeAddr=${addrs[$i]} CPUs=$(getconf _NPROCESSORS_ONLN) State=UNKNOWN"
    done
    for p in "${partitions[@]}"; do
      nodes=""
      IFS=, read -ra ids <<< "${p#*=}"
      for n in "${ids[@]}"; do
        [ -n "${hosts[$n]:-}" ] || { echo "slurm/local-cluster/start.sh: --partition $p: no node $n (nodes 0..$((${#hosts[@]} - 1)))" >&2; return 2; }
        nodes+="${nodes:+,}${hosts[$n]}"
      done
      echo "PartitionName=${p%%=*} Nodes=$nodes Default=$default MaxTime=INFINITE State=UP"
      default=NO
    done
  } > "$dir/slurm.conf" || return 2
  # PMIx's client folder per node, like the spool (srun --mpi=pmix reads mpi.conf beside slurm.conf).
  echo "PMIxCliTmpDirBase=$dir/pmix" > "$dir/mpi.conf"
  export SLURM_CONF=$dir/slurm.conf

  # A munged that answers may be another test's on this machine: use it. Else start one (--force:
  # over a dead one's socket) and note its pid for stop.sh.
  if ! munge -n > /dev/null 2>&1; then
    install -d -o munge -g munge /run/munge
    runuser -u munge -- /usr/sbin/munged --force || return 1
    cat /run/munge/munged.pid > "$dir/munged.ours"
  fi
  if [ -z "$cluster" ]; then
    /usr/sbin/slurmctld -f "$SLURM_CONF" && /usr/sbin/slurmd -f "$SLURM_CONF" -N localhost || return 1
  else
    # nsenter --net, not `ip netns exec`: the latter remounts /sys, and slurmd then finds no cgroup
    # fs. The nodes share one filesystem: each slurmd's own mount namespace gives it its own spool
    # and PMIx folder (without them, steps fail with "File exists").
    nsenter --net="$ETH_SLURM_NETNS" unshare --uts bash -c \
      "hostname $cluster-head && exec /usr/sbin/slurmctld -f $SLURM_CONF" || return 1
    for i in "${!hosts[@]}"; do
      mkdir -p "$dir/spool-${hosts[$i]}" "$dir/pmix-${hosts[$i]}"
      nsenter --net="/run/netns/$(node_ns "$cluster" "$i")" unshare --uts --mount --propagation private bash -c \
        "hostname ${hosts[$i]} && mount --bind $dir/spool-${hosts[$i]} $dir/spool && mount --bind $dir/pmix-${hosts[$i]} $dir/pmix \
         && exec /usr/sbin/slurmd -f $SLURM_CONF -N ${hosts[$i]}" || return 1
    done
  fi
  for _ in $(seq 60); do
    [ "$(eth_slurm_client sinfo -h -N -o "%t" 2> /dev/null | grep -cx "idle")" -eq ${#hosts[@]} ] && return 0
    sleep 0.5
  done
  echo "slurm/local-cluster/start.sh: ${#hosts[@]} node(s) not all idle within 30 s; see $dir/*.log" >&2
  return 1
}
# A Slurm client command where the cluster's slurmctld is reachable (the head namespace of an
# emulated cluster, else here).
eth_slurm_client() {
  if [ -n "${ETH_SLURM_NETNS:-}" ]; then nsenter --net="$ETH_SLURM_NETNS" "$@"; else "$@"; fi
}
eth_slurm_start "$@"

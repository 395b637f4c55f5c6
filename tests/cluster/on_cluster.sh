#!/usr/bin/env bash
# Runs an MPI test script across an emulated cluster (scripts/cluster/up.sh): NODES network
# namespaces with NICs at RATE, so that its multi-rank runs put declared nodes on different
# namespaces and real TCP, not shared memory, carries what crosses them. Then checks that the
# nodes' NICs carried the data: at least MIN_KB kilobytes sent by the busiest node (the runs'
# transfers and reductions; a run that silently stayed on one host sends almost nothing).
# Skips (exit 77) where namespaces cannot be made. The cluster is torn down however it ends.
#   on_cluster.sh SOURCE_DIR NODES RATE MIN_KB TEST_SCRIPT ARGS...
set -uo pipefail
src=$1 nodes=$2 rate=$3 min_kb=$4
shift 4
source "$src/scripts/cluster/cluster_env.sh"
cluster_can_run || exit 77
name="etht$$"   # unique per test, so that ctest -j2 runs two clusters side by side
trap 'bash "$src/scripts/cluster/down.sh" "$name"' EXIT
bash "$src/scripts/cluster/up.sh" "$name" --nodes "$nodes" --ranks-per-node 2 --rate "$rate" || exit 1

ETH_CLUSTER=$name bash "$@"
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"

# Bytes each node sent through its rated NIC (the tbf qdisc's counter, egress from the node).
max=0
for i in $(seq 0 $((nodes - 1))); do
  sent=$(ip netns exec "$(node_ns "$name" "$i")" tc -s qdisc show dev eth0 | awk '/Sent/ {print $2; exit}')
  echo "node $i sent $sent bytes through its NIC"
  [ "$sent" -le "$max" ] || max=$sent
done
if [ "$max" -lt $((min_kb * 1000)) ]; then
  echo "FAIL: the busiest node sent $max bytes through its NIC, expected at least $min_kb kB"
  exit 1
fi

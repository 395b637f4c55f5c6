#!/usr/bin/env bash
# Brings up an emulated cluster on this machine (root only): one network namespace per node,
# joined by a Linux bridge in a head namespace, each node's NIC rate-limited by a tbf qdisc on
# both ends of its veth pair (egress from the node and egress towards it). Ranks of one node
# then share memory, ranks of different nodes talk real TCP through the rated NICs.
# docs/emulated-cluster.md explains the pieces; scripts/cluster/mpirun.sh launches on it and
# scripts/cluster/down.sh tears it down by name.
#
#   up.sh NAME --nodes K --ranks-per-node R --rate RATE [--slow-rate RATE --slow-nodes I,J]
#     RATE: a tc rate (100mbit, 1gbit, 10gbit). Nodes listed in --slow-nodes get --slow-rate.
#
# Creates namespaces NAME-h (head, bridge, address 198.18.0.254) and NAME-0 .. NAME-(K-1)
# (node I at 198.18.0.(I+1)), and /run/eth-cluster/NAME/ with `hosts` (one address per
# node) and topology.yaml (K nodes of R cpu-rank devices, the network at RATE).
# Exits 77 when namespaces cannot be made here (not root, no `ip netns`): callers skip.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/cluster_env.sh"

name=$1
shift
nodes=2 rpn=1 rate=1gbit slow_rate="" slow_nodes=""
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes=$2 ;;
    --ranks-per-node) rpn=$2 ;;
    --rate) rate=$2 ;;
    --slow-rate) slow_rate=$2 ;;
    --slow-nodes) slow_nodes=$2 ;;
    *) echo "up.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
cluster_can_run || exit 77
[ ! -e "$(cluster_dir "$name")" ] || { echo "up.sh: cluster $name exists; down.sh $name first" >&2; exit 1; }
# Half-made clusters are torn down, so that a failed start leaves nothing behind.
trap '[ $? -eq 0 ] || bash "$here/down.sh" "$name"' EXIT

dir=$(cluster_dir "$name")
mkdir -p "$dir"
head=$(head_ns "$name")
ip netns add "$head"
ip -n "$head" link set lo up
ip -n "$head" link add br0 type bridge
ip -n "$head" addr add "$CLUSTER_NET.254/24" dev br0
ip -n "$head" link set br0 up

# The burst must hold at least one GSO segment (64 KiB) and a tick's worth of bytes at the rate,
# or tbf throttles below it; 256 KiB is what the notes saw work at 1 Gbit/s, more above.
burst_for() { case $1 in *gbit) echo "$(( ${1%gbit} > 1 ? ${1%gbit} * 256 : 256 ))kb" ;; *) echo 256kb ;; esac; }

: > "$dir/hosts"
for i in $(seq 0 $((nodes - 1))); do
  ns=$(node_ns "$name" "$i")
  r=$rate
  [[ ",$slow_nodes," == *",$i,"* ]] && r=$slow_rate
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  # Created straight into the two namespaces: no name ever exists in the root namespace.
  ip link add "v$i" netns "$head" type veth peer name eth0 netns "$ns"
  ip -n "$head" link set "v$i" master br0 up
  ip -n "$ns" addr add "$CLUSTER_NET.$((i + 1))/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$r" burst "$(burst_for "$r")" latency 100ms
  ip netns exec "$head" tc qdisc add dev "v$i" root tbf rate "$r" burst "$(burst_for "$r")" latency 100ms
  echo "$CLUSTER_NET.$((i + 1))" >> "$dir/hosts"
done

# The topology eth_plan and eth_train read: one entry per node, the network at the common rate
# (the format has one network link, so slower nodes are noted in a comment only).
gbs=$(rate_gbs "$rate")
{
  echo "# Emulated cluster $name (scripts/cluster/up.sh): $nodes nodes of $rpn CPU ranks, NICs at $rate."
  [ -z "$slow_nodes" ] || echo "# Nodes $slow_nodes have NICs at $slow_rate ($(rate_gbs "$slow_rate") GB/s)."
  echo "device_types:"
  echo "  - {name: cpu-rank, memory_gb: 5, peak_tflops: {fp32: 0.093}, memory_bandwidth_gbs: 20}"
  echo "network: {kind: ethernet, bandwidth_gbs: $gbs, latency_us: 50}"
  echo "nodes:"
  echo "  - {name: node, count: $nodes, link: {kind: shared-memory, bandwidth_gbs: 1.2, latency_us: 1}, devices: [{type: cpu-rank, count: $rpn}]}"
} > "$dir/topology.yaml"
echo "cluster $name: $nodes nodes x $rpn ranks, NICs at $rate${slow_nodes:+ (nodes $slow_nodes at $slow_rate)}; topology $dir/topology.yaml"

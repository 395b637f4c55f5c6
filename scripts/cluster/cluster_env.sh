# Sourced by the emulated-cluster scripts: names and paths shared by up, down, mpirun and agent.
CLUSTER_NET=198.18.0          # the benchmarking range (RFC 2544), only inside the namespaces
CLUSTER_STATE=${ETH_CLUSTER_STATE:-/run/eth-cluster}

cluster_dir() { echo "$CLUSTER_STATE/$1"; }
head_ns() { echo "$1-h"; }
node_ns() { echo "$1-$2"; }
# Node I's hostname (its own UTS namespace): what eth_topo reports and Slurm calls it.
node_host() { echo "$1-node$2"; }

# Namespaces need root and iproute2; prints why not and fails otherwise.
cluster_can_run() {
  if [ "$(id -u)" -ne 0 ]; then echo "SKIP: emulated cluster needs root (network namespaces)"; return 1; fi
  if ! command -v ip > /dev/null || ! command -v tc > /dev/null; then
    echo "SKIP: emulated cluster needs ip and tc (Debian package iproute2)"; return 1
  fi
  local probe="eth-probe-$$" why=""
  if ! ip netns add "$probe" 2> /dev/null; then
    echo "SKIP: cannot create network namespaces here (ip netns add failed)"; return 1
  fi
  # The kernel must also offer veth pairs and the tbf qdisc (modules a container may lack).
  if ! ip -n "$probe" link add p0 type veth peer name p1 2> /dev/null; then
    why="no veth pairs (ip link add type veth failed)"
  elif ! ip netns exec "$probe" tc qdisc add dev p0 root tbf rate 1gbit burst 256kb latency 100ms 2> /dev/null; then
    why="no tbf qdisc (tc qdisc add tbf failed)"
  fi
  ip netns delete "$probe"
  [ -z "$why" ] || { echo "SKIP: emulated cluster needs $why"; return 1; }
}

# A tc rate (100mbit, 1gbit, 10gbit) in GB/s, for topology YAML.
rate_gbs() {
  local r=$1
  case $r in
    *gbit) awk -v x="${r%gbit}" 'BEGIN { print x / 8 }' ;;
    *mbit) awk -v x="${r%mbit}" 'BEGIN { print x / 8000 }' ;;
    *) echo "rate $r: expected NNmbit or NNgbit" >&2; return 1 ;;
  esac
}

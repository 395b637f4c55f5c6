#!/usr/bin/env bash
# Gradient synchronisation across an emulated cluster (scripts/cluster): 4 nodes of 2 CPU ranks,
# NICs at each rate in RATES, eth_train alternating between --grad-sync block, per-layer and
# flat on the same plan, data and seed. Per run it also reads each node's NIC byte counter (tc),
# so the summary sets measured inter-node bytes beside the bandwidth bound of the plan's
# reduction. Writes bench/results/grad_sync_cluster.json; docs/results.md quotes it. Root only.
#
#   bench/run_grad_sync_cluster.sh              # defaults below
#   RATES="1gbit" REPEATS=2 bench/run_grad_sync_cluster.sh
#   MODEL=inputs/models/demo.yaml PLAN=bench/plans/demo-8-data-parallel.yaml OUT=... bench/run_grad_sync_cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)

RATES=${RATES:-"1gbit 10gbit"}
REPEATS=${REPEATS:-3}        # runs per mode and rate, the order of modes rotating
STEPS=${STEPS:-5}            # steps per run; the first is warm-up and discarded
SEQ_LEN=${SEQ_LEN:-64}
MODEL=${MODEL:-inputs/models/bench-12l.yaml}
PLAN=${PLAN:-bench/plans/grad-sync-3pipe-8.yaml}
MODES=${MODES:-"block per-layer flat"}
NODES=4 RANKS_PER_NODE=2
BUILD=${BUILD:-build}
OUT=${OUT:-bench/results/grad_sync_cluster.json}

source scripts/env.sh
source scripts/cluster/cluster_env.sh
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1   # 8 ranks on the host's cores: one thread each
cluster_can_run || exit 1

tmp=$(mktemp -d)
name="ethb$$"
trap 'bash scripts/cluster/down.sh "$name"; rm -rf "$tmp"' EXIT
# A private copy: the build folder may be relinked by someone else while this runs.
cp "$BUILD/app/eth_train" "$tmp/eth_train"
# The KJV shard holds GPT-2 ids: remapped to a smaller vocabulary when the model has one.
vocab=$(python3 -c "import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))['vocab_size'])" "$MODEL")
if [ "$vocab" -lt 50257 ]; then
  python3 bench/make_small_vocab_shard.py inputs/data/kjv_train.bin "$tmp/train.bin" "$vocab"
else
  cp inputs/data/kjv_train.bin "$tmp/train.bin"
fi

# nic_bytes: "sent received" bytes of each node's NIC, one node per line (the tbf counters on the
# node's end and on the head's end of its veth).
nic_bytes() {
  local i
  for i in $(seq 0 $((NODES - 1))); do
    echo "$(ip netns exec "$(node_ns "$name" "$i")" tc -s qdisc show dev eth0 | awk '/Sent/ {print $2; exit}') \
$(ip netns exec "$(head_ns "$name")" tc -s qdisc show dev "v$i" | awk '/Sent/ {print $2; exit}')"
  done | paste -sd' '
}

runs="$tmp/runs.tsv"
: > "$runs"
read -ra modes <<< "$MODES"
for rate in $RATES; do
  bash scripts/cluster/up.sh "$name" --nodes "$NODES" --ranks-per-node "$RANKS_PER_NODE" --rate "$rate"
  topo="$(cluster_dir "$name")/topology.yaml"
  for rep in $(seq 1 "$REPEATS"); do
    # Rotate which mode goes first, so that drift on the shared machine hits every mode alike.
    for k in "${!modes[@]}"; do
      mode=${modes[$(( (k + rep) % ${#modes[@]} ))]}
      dir="$tmp/$rate-$mode-$rep"
      before=$(nic_bytes)
      echo "== $rate $mode repeat $rep" >&2
      bash scripts/cluster/mpirun.sh "$name" -np $((NODES * RANKS_PER_NODE)) "$tmp/eth_train" --model "$MODEL" \
        --topology "$topo" --plan "$PLAN" --train-data "$tmp/train.bin" --seq-len "$SEQ_LEN" --steps "$STEPS" \
        --grad-sync "$mode" --output-dir "$dir" > "$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
      grep -E '^step +[0-9]+/' "$dir.log" | tail -n 1 >&2
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$rate" "$mode" "$rep" "$dir" "$before" "$(nic_bytes)" >> "$runs"
    done
  done
  bash scripts/cluster/down.sh "$name"
done

python3 bench/summarize_grad_sync_cluster.py --runs "$runs" --plan "$PLAN" --model "$MODEL" --out "$OUT" \
  --steps "$STEPS" --seq-len "$SEQ_LEN" --nodes "$NODES" --ranks-per-node "$RANKS_PER_NODE" \
  --command "RATES=\"$RATES\" REPEATS=$REPEATS STEPS=$STEPS MODEL=$MODEL PLAN=$PLAN bench/run_grad_sync_cluster.sh"
python3 bench/stamp.py "$OUT" "$load_at_start"

#!/usr/bin/env bash
# Gradient synchronisation, block-wise against per-layer, in one invocation: 8 CPU ranks, a
# 3-pipeline plan, runs of eth_train alternating between --grad-sync block and per-layer on the
# same data and seed. Writes bench/results/grad_sync.json; docs/results.md quotes it.
#
#   bench/run_grad_sync.sh                       # defaults below, about 3 minutes on 2 cores
#   REPEATS=3 STEPS=4 TOPOLOGIES=tests/mpi/plans/cpu-4nodes-8.yaml bench/run_grad_sync.sh
set -euo pipefail
cd "$(dirname "$0")/.."
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)

REPEATS=${REPEATS:-4}        # runs per mode and topology, the modes alternating
STEPS=${STEPS:-6}            # steps per run; the first is warm-up and discarded
SEQ_LEN=${SEQ_LEN:-64}
VOCAB=${VOCAB:-4096}         # must match the model's vocab_size
MODEL=${MODEL:-inputs/models/bench-12l.yaml}
PLAN=${PLAN:-bench/plans/grad-sync-3pipe-8.yaml}
# 4 declared nodes of 2 ranks (hierarchical reductions), then 1 node of 8 (flat all-reduces).
TOPOLOGIES=${TOPOLOGIES:-"tests/mpi/plans/cpu-4nodes-8.yaml bench/plans/cpu-1node-8.yaml"}
BUILD=${BUILD:-build}
OUT=${OUT:-bench/results/grad_sync.json}

source scripts/env.sh                  # root + oversubscribe
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1   # 8 ranks on 2 cores: one thread each

cmake --build "$BUILD" -j2 --target eth_train >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The KJV shard holds GPT-2 ids (< 50257): remap it to the model's small vocabulary.
# Run a private copy: the build folder may be relinked by someone else while this runs.
cp "$BUILD/app/eth_train" "$tmp/eth_train"
python3 bench/make_small_vocab_shard.py inputs/data/kjv_train.bin "$tmp/train.bin" "$VOCAB"

runs="$tmp/runs.tsv"
: > "$runs"
for topo in $TOPOLOGIES; do
  for rep in $(seq 1 "$REPEATS"); do
    # Alternate which mode goes first, so that drift on the shared machine hits both alike.
    if (( rep % 2 )); then modes="block per-layer"; else modes="per-layer block"; fi
    for mode in $modes; do
      dir="$tmp/$(basename "$topo" .yaml)-$mode-$rep"
      cmd=(mpirun -np 8 "$tmp/eth_train" --model "$MODEL" --topology "$topo" --plan "$PLAN"
           --train-data "$tmp/train.bin" --seq-len "$SEQ_LEN" --steps "$STEPS" --grad-sync "$mode"
           --output-dir "$dir")
      echo "== $topo $mode repeat $rep" >&2
      start=$(date +%s.%N)
      "${cmd[@]}" > "$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
      end=$(date +%s.%N)
      grep -E '^\| gradient sync|^step +[0-9]+/' "$dir.log" | tail -n 2 >&2
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$topo" "$mode" "$rep" "$dir" "$(echo "$end - $start" | bc)" \
        "$(echo "${cmd[*]}" | sed "s|$tmp/train.bin|TRAIN_BIN|; s|$tmp/eth_train|$BUILD/app/eth_train|; s|$tmp/|OUT/|")" >> "$runs"
    done
  done
done

python3 bench/summarize_grad_sync.py --runs "$runs" --plan "$PLAN" --model "$MODEL" --out "$OUT" \
  --steps "$STEPS" --seq-len "$SEQ_LEN" --vocab "$VOCAB" \
  --train-bin-note "inputs/data/kjv_train.bin remapped by bench/make_small_vocab_shard.py to $VOCAB ids"
python3 bench/stamp.py "$OUT" "$load_at_start"

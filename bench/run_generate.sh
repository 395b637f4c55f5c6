#!/usr/bin/env bash
# Generation tokens/s of GPT-2 124M on the CPU, with the key/value cache against recomputing the
# whole context per token (bench_generate: one process, runs interleaved, random-initialised
# weights, greedy). Writes bench/results/generate.json; docs/results.md quotes it.
#
#   bench/run_generate.sh                        # 64-token prompt + 64 new tokens, 3 runs each
#   PROMPT=128 NEW=32 REPEATS=5 bench/run_generate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
MODEL=${MODEL:-inputs/models/gpt2-124m.yaml}
PROMPT=${PROMPT:-64}
NEW=${NEW:-64}
REPEATS=${REPEATS:-3}
BUILD=${BUILD:-build}
OUT_DIR=${OUT_DIR:-bench/results}
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS
cmake --build "$BUILD" -j"$THREADS" --target bench_generate >/dev/null
mkdir -p "$OUT_DIR"
"$BUILD/bench/bench_generate" --model "$MODEL" --prompt-tokens "$PROMPT" --new-tokens "$NEW" --repeats "$REPEATS" \
  --json "$OUT_DIR/generate.json"

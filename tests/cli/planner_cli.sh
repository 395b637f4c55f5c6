#!/usr/bin/env bash
# eth_profile and eth_plan end to end: two ranks profile this machine in lockstep (rank 0 alone
# writes), eth_plan plans with that profile, and eth_train runs the plan as written; each kind
# of bad input ends with one error line naming the file or option, and a non-zero exit.
# Usage: planner_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1
src=$2
source "$src/scripts/env.sh"
export OMP_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$src/tests/cli/cli_checks.sh"

model="$src/inputs/models/tiny-4l.yaml"
topology="$src/tests/mpi/plans/cpu-2nodes-4.yaml"   # 4 ranks of device type cpu-rank
profile() { timeout 120 mpirun -np 2 "$build/app/eth_profile" "$@"; }
plan() { timeout 120 "$build/app/eth_plan" "$@"; }

profile --model "$model" --seq-len 16 --device-type cpu-rank --micro-batches 1 2 --repetitions 2 \
  --out "$work/profile.yaml" >"$work/out" 2>&1
check "two ranks profile in lockstep" $? "$(cat "$work/out")"
[ "$(grep -c '^wrote' "$work/out")" -eq 1 ] && grep -q "method: measured" "$work/profile.yaml"
check "rank 0 alone writes the measured profile" $? "$(cat "$work/out")"

plan --topology "$topology" --model "$model" --batch 8 --seq-len 16 --profile "$work/profile.yaml" \
  --out "$work/plan.yaml" >"$work/out" 2>&1
check "eth_plan plans with it" $? "$(cat "$work/out")"
grep -q "profile cpu-rank *measured" "$work/out"
check "the plan uses the measured profile, not an estimate" $? "$(head -3 "$work/out")"
/usr/bin/python3 - "$work/data.bin" <<'PY'
import sys, numpy as np
h = np.zeros(256, dtype=np.int32); h[0], h[1], h[2] = 20240520, 1, 4000
open(sys.argv[1], "wb").write(h.tobytes() + (np.arange(4000) * 31 % 97).astype(np.uint16).tobytes())
PY
timeout 120 mpirun -np 4 "$build/app/eth_train" --model "$model" --topology "$topology" --plan "$work/plan.yaml" \
  --train-data "$work/data.bin" --seq-len 16 --steps 2 --output-dir "$work/run" >"$work/out" 2>&1
check "eth_train runs the plan as written" $? "$(tail -5 "$work/out")"

expect_one_error eth_profile "profile: sequence longer than the model's, from 2 ranks" "--seq-len" "max_seq_len" -- \
  profile --model "$model" --seq-len 64 --out "$work/bad.yaml"
expect_one_error eth_profile "profile: no model" "--model" -- profile --seq-len 16
expect_one_error eth_profile "profile: no timed runs" "--repetitions" "at least 1" -- \
  profile --model "$model" --seq-len 16 --repetitions 0 --out "$work/bad.yaml"
expect_one_error eth_profile "profile: micro-batch sizes out of order" "--micro-batches" "ascending" "2 1" -- \
  profile --model "$model" --seq-len 16 --micro-batches 2 1 --out "$work/bad.yaml"
expect_one_error eth_plan "plan: a micro-batch of no samples" "--micro-batches" "positive" -- \
  plan --topology "$topology" --model "$model" --batch 8 --seq-len 16 --micro-batches 0
expect_one_error eth_plan "plan: negative stage width" "--max-stage-width" "-1" -- \
  plan --topology "$topology" --model "$model" --batch 8 --seq-len 16 --max-stage-width -1
expect_one_error eth_plan "plan: a batch of no samples" "global_batch" "a positive number of samples" -- \
  plan --topology "$topology" --model "$model" --batch 0 --seq-len 16
expect_one_error eth_plan "plan: unknown baseline" "--baseline" "layer-balanced" -- \
  plan --topology "$topology" --model "$model" --batch 8 --seq-len 16 --baseline fastest
expect_one_error eth_plan "plan: unknown memory savers" "--memory-savers" "'all', 'recompute' or 'none'" -- \
  plan --topology "$topology" --model "$model" --batch 8 --seq-len 16 --memory-savers most
expect_one_error eth_plan "plan: an unknown precision" "--precision" "expected auto, fp32, tf32, bf16 or fp16, got fp8" -- \
  plan --topology "$topology" --model "$model" --batch 8 --seq-len 16 --precision fp8
# A profile measured at fp32 (cpu-rank, the demo model's) given for a bf16 job: refused, naming both.
expect_one_error eth_plan "plan: a profile of another precision" "cpu-rank-demo-T64.yaml" "precision" \
  "(bf16 in fp32 arithmetic for cpu-rank, --precision bf16)" "got fp32" -- \
  plan --topology "$topology" --model "$src/inputs/models/demo.yaml" --batch 8 --seq-len 64 --precision bf16 \
  --profile "$src/inputs/profiles/cpu-rank-demo-T64.yaml"
# 16 GB cards and a 7.3B model: without recomputation nothing fits, and the error names the rank
# and its excess; with it (the default) a plan whose stages recompute, with each rank's memory.
cards="$src/inputs/scenarios/16gb-cards.yaml"
expect_one_error eth_plan "plan: nothing fits without recomputation" "scn-8v100-8t4-16gb.yaml" "device_types (rank" \
  "GB more than its 16 GB" -- plan --scenario "$cards" --memory-savers none --out "$work/none.yaml"
plan --scenario "$cards" --out "$work/cards.yaml" >"$work/out" 2>&1
check "plan: 16 GB cards fit by recomputing" $? "$(cat "$work/out")"
grep -Eq "recompute: (selective|full)" "$work/cards.yaml"
check "plan: its stages recompute" $? "$(cat "$work/cards.yaml")"
grep -Eq "^ranks +device +parameters +gradients +optimizer +activations +workspace +total" "$work/out"
check "plan: memory per rank by kind" $? "$(cat "$work/out")"
sed 's/method: measured/method: guessed/' "$work/profile.yaml" >"$work/guessed.yaml"
expect_one_error eth_plan "plan: malformed profile" "$work/guessed.yaml" "method" -- \
  plan --topology "$topology" --model "$model" --batch 8 --seq-len 16 --profile "$work/guessed.yaml"

# The llama family: planned from a Hugging Face config.json (Llama-3-8B at T 8192 on A100s and
# V100s), its drawing naming the stages that hold the embedding and the untied head; a config
# ETH does not compute refused in one line; the programs that run the stage refuse its parts.
plan --scenario "$src/inputs/scenarios/llama/llama3-8b-a100-v100.yaml" --out "$work/llama.yaml" \
  --draw "$work/llama.svg" >"$work/out" 2>&1
check "plan: Llama-3-8B from its config.json" $? "$(cat "$work/out")"
grep -q "layers \[0, [0-9]*) + embedding<" "$work/llama.svg" && grep -q ", 32) + head<" "$work/llama.svg" &&
  grep -q "NH 32 / NKV 8, hs 128, FC 14336, rmsnorm 1e-05, rotary 500000, swiglu, untied head" "$work/llama.svg"
check "plan: the drawing names the model and the stages of the embedding and the head" $? \
  "$(grep -o 'stage [0-9]*: layers[^<]*' "$work/llama.svg" | sort -u)"
mkdir -p "$work/yarn"
sed 's/"rope_scaling": null/"rope_scaling": {"rope_type": "yarn", "factor": 4.0}/' \
  "$src/inputs/models/hf/Llama-3-8B/config.json" >"$work/yarn/config.json"
expect_one_error eth_plan "plan: a rope type ETH does not compute" "yarn/config.json" "rope_scaling.rope_type" \
  "\"yarn\"" -- plan --topology "$topology" --model "$work/yarn/config.json" --batch 8 --seq-len 16
llama="$src/inputs/models/tiny-llama-4l.yaml"
profile --model "$llama" --seq-len 16 --device-type cpu-rank --micro-batches 1 --repetitions 1 \
  --out "$work/llama-profile.yaml" >"$work/out" 2>&1 && grep -q "method: measured" "$work/llama-profile.yaml"
check "profile: a Llama's stage measured, from 2 ranks" $? "$(tail -3 "$work/out")"
timeout 120 mpirun -np 4 "$build/app/eth_train" --model "$llama" --topology "$topology" --plan "$work/plan.yaml" \
  --train-data "$work/data.bin" --seq-len 16 --steps 1 --output-dir "$work/llama-run" >"$work/out" 2>&1
check "train: a Llama on the plan's 4 ranks" $? "$(tail -3 "$work/out")"

finish

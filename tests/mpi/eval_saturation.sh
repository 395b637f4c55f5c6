#!/usr/bin/env bash
# Saturations are charged to the step they happen in. On cpu-mixed16-crossing-4.yaml (--precision
# auto: rank 2 fp16, the others bf16) two-depths-4.yaml's second pipeline sends rank 1's bf16
# activations to rank 2's fp16 stage, clamped at 65504 where they exceed it. A first step at lr
# 1e5 makes the weights, and so the activations, of that order. Then:
#   - a run that evaluates after every step counts saturations in its validation records;
#   - its training records count those of their own steps only: the same as a run that never
#     evaluates (an evaluation's count was once left for the next step to report).
#   eval_saturation.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
LR=1e5 tiny_job 3
write_tiny_shard "$work/val.bin" 11
export PRECISION=auto
plan=(--topology "$plans/cpu-mixed16-crossing-4.yaml" --plan "$plans/two-depths-4.yaml")
run evaluated 4 "${plan[@]}" --val-data "$work/val.bin" --eval-samples 4 --eval-every 1
run unevaluated 4 "${plan[@]}"
$py - "$work/evaluated/metrics.jsonl" "$work/unevaluated/metrics.jsonl" <<'PY'
import json, sys
evaluated, unevaluated = ([json.loads(line) for line in open(p)] for p in sys.argv[1:3])
steps = lambda records: {r["step"]: r["saturated"] for r in records if "loss" in r}
evaluations = {r["step"]: r.get("saturated", 0) for r in evaluated if "val_loss" in r}
print("saturated per step, evaluated:", steps(evaluated), "never evaluated:", steps(unevaluated),
      "per evaluation:", evaluations)
assert any(n > 0 for n in steps(unevaluated).values()), "nothing saturated in training: the test proves nothing"
assert steps(evaluated) == steps(unevaluated), "FAIL: a step's count includes an evaluation's"
assert sorted(evaluations) == [1, 2, 3] and all(n > 0 for n in evaluations.values()), \
    "FAIL: an evaluation's saturations not in its record"
PY
echo "each evaluation counts its own saturations; each step's count is its own"

#!/usr/bin/env bash
# Resume across precisions: checkpoints hold fp32 state (parameters, both AdamW moments) whatever
# the run's --precision, so a bf16 run resumes an fp32 checkpoint and the other way round.
# References: 6 steps of a 4-rank plan in fp32 and in bf16, checkpoints after step 3. Then:
#   - bf16 from its own step 3, same plan: bit-identical to the uninterrupted bf16 run (the
#     checkpoint is the bf16 job's whole state: the bf16 copies are made from it, not stored);
#   - bf16 from the fp32 checkpoint, and fp32 from the bf16 one, each on the plan and on one rank:
#     the plan equals one rank (bf16 within $BF16_TOLERANCE, fp32 within 1e-5: the same state came
#     back under either plan), and the resumed losses stay within 1% of the uninterrupted run of
#     the precision they continue in (its first 3 steps were of the other precision: they differ
#     by bf16's training noise only, 2e-4 measured; a state lost or misread moves them far more).
#   precision_resume.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
tiny_job 6
bf16_tolerance=${BF16_TOLERANCE:-2e-3}
plan=(--topology "$plans/cpu-2nodes-4.yaml" --plan "$plans/two-depths-4.yaml")
one=(--batch 10 --micro-batch 5)
PRECISION=fp32 run fp32 4 "${plan[@]}" --checkpoint-every 3
PRECISION=bf16 run bf16 4 "${plan[@]}" --checkpoint-every 3
grep -q "precision *| bf16" "$work/bf16.log"

PRECISION=bf16 run bf16_again 4 "${plan[@]}" --resume "$work/bf16/checkpoints/step_3.h5"
cmp "$work/bf16.bin" "$work/bf16_again.bin"
echo "bf16 resumed from its own step 3: final parameters bit-identical to the uninterrupted bf16 run"

# resumed FROM TO TOLERANCE: TO-precision runs from FROM's step-3 checkpoint on the plan and on one rank.
resumed() {
  local from=$1 to=$2 tolerance=$3
  PRECISION=$to run "${to}_from_$from" 4 "${plan[@]}" --resume "$work/$from/checkpoints/step_3.h5"
  PRECISION=$to run "${to}_from_${from}_one" 1 "${one[@]}" --resume "$work/$from/checkpoints/step_3.h5"
  grep "resumed from" "$work/${to}_from_$from.log"
  echo "$to from the $from checkpoint: the plan against one rank"
  $py "$src/tests/mpi/compare_runs.py" "$work/${to}_from_${from}_one" "$work/${to}_from_${from}_one.bin" \
    "$work/${to}_from_$from" "$work/${to}_from_$from.bin" "$tolerance"
  $py - "$work/$to/metrics.jsonl" "$work/${to}_from_$from/metrics.jsonl" <<'PY'
import json, sys
ref, run = ({r["step"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r} for p in sys.argv[1:3])
assert sorted(run) == [4, 5, 6], sorted(run)
worst = max(abs(run[s] - ref[s]) / ref[s] for s in run)
print(f"losses of steps 4-6 against the uninterrupted run of that precision: max relative difference {worst:.2e} (bound 1e-2)")
assert worst < 1e-2, "FAIL: the resumed run left the reference's trajectory"
PY
}
resumed fp32 bf16 "$bf16_tolerance"
resumed bf16 fp32 1e-5
echo "resume across precisions works both ways"

#!/usr/bin/env bash
# Dynamic loss scaling across the job (fp16; lib/model/loss_scale.hpp). 6 steps of a 4-rank plan
# in fp16 with a window of 2 clean steps, an overflow injected on rank 1 in step 3
# (--inject-fault overflow: an infinity into block 0's gradient, what an fp16 overflow leaves):
#   - every rank skips step 3: the log says so once, metrics.jsonl marks it, the scale goes
#     65536, 131072 (two clean steps), 65536 (the overflow), then doubles again after two more;
#   - nothing of the job's state changes in the skipped step: the checkpoints after steps 2 and 3
#     hold the same parameters and AdamW moments, bit for bit;
#   - the plan equals one rank that skips the same step (its own overflow in step 3), within
#     fp16's bound (tests/mpi/CMakeLists.txt);
#   - resumed from step 4's checkpoint, the plan goes on with the checkpoint's scale and skip count
#     and ends bit-identical to the uninterrupted run;
#   - a scale that falls below its floor ends the job: --loss-scale 1 and the overflow in step 1,
#     one line naming the step, the scale, the block and the rank that overflowed, a non-zero exit.
#   loss_scale.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
tiny_job 6
export PRECISION=fp16
tolerance=${FP16_TOLERANCE:-2e-3}
plan=(--topology "$plans/cpu-2nodes-4.yaml" --plan "$plans/two-depths-4.yaml")
scaling=(--loss-scale-window 2)
run plan 4 "${plan[@]}" "${scaling[@]}" --checkpoint-every 1 --inject-fault overflow:rank=1:step=3:block=0
grep -q "loss scale *| dynamic (fp16 ranks): 65536, x2 after 2 clean steps" "$work/plan.log"
[ "$(grep -c "overflow at loss scale 131072 in the gradient of block 0.*skipped on every rank, loss scale now 65536" \
      "$work/plan.log")" -eq 1 ] || { cat "$work/plan.log"; echo "FAIL: step 3's overflow not reported once"; exit 1; }
$py - "$work/plan/metrics.jsonl" <<'PY'
import json, sys
steps = [r for r in map(json.loads, open(sys.argv[1])) if "loss" in r]
scales = [r["loss_scale"] for r in steps]
skipped = [r["step"] for r in steps if r["skipped"]]
print("loss scale after each step:", scales, "skipped:", skipped)
assert scales == [65536, 131072, 65536, 65536, 131072, 131072], scales
assert skipped == [3] and steps[-1]["skipped_steps"] == 1, (skipped, steps[-1])
PY
$py - "$work/plan/checkpoints/step_2.h5" "$work/plan/checkpoints/step_3.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1]) as a, h5py.File(sys.argv[2]) as b:
    names = []
    a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    tensors = [n for n in names if n.split("/")[0] in ("params", "adam_m", "adam_v")]
    assert len(tensors) > 10, names
    for n in tensors:
        assert np.array_equal(a[n][()], b[n][()]), f"FAIL: {n} changed in the skipped step"
    assert b.attrs["skipped_steps"] == 1 and b.attrs["loss_scale"] == 65536, dict(b.attrs)
print(f"the skipped step changed none of {len(tensors)} parameter and moment tensors")
PY
run one 1 --batch 10 --micro-batch 5 "${scaling[@]}" --inject-fault overflow:rank=0:step=3:block=0
echo "the plan against one rank that skipped the same step:"
$py "$src/tests/mpi/compare_runs.py" "$work/one" "$work/one.bin" "$work/plan" "$work/plan.bin" "$tolerance"
run resumed 4 "${plan[@]}" "${scaling[@]}" --resume "$work/plan/checkpoints/step_4.h5"
grep -q "loss scale *| dynamic (fp16 ranks): 65536," "$work/resumed.log"
cmp "$work/plan.bin" "$work/resumed.bin"
grep "skipped_steps" "$work/resumed/metrics.jsonl" | tail -1 | grep -q '"skipped_steps":1' ||
  { echo "FAIL: the resumed run lost the skip count"; exit 1; }
echo "resumed from step 4: the checkpoint's scale and skip count, final parameters bit-identical"
# Block 0 (the embedding and layer 0) is summed between ranks 0 and 1: after the sums both hold
# the infinity, and only the check of each rank's own gradients before them names rank 1.
if launch_mpi 120 4 "$build/app/eth_train" "${common[@]}" --precision fp16 "${plan[@]}" --loss-scale 1 \
     --inject-fault overflow:rank=1:step=1:block=0 --output-dir "$work/floor" > "$work/floor.log" 2>&1; then
  cat "$work/floor.log"; echo "FAIL: a scale below its floor did not end the job"; exit 1
fi
grep -F "step 1: the gradients overflowed at loss scale 1 in the gradient of block 0 (embedding + layer 0), on rank 1; halving" "$work/floor.log" ||
  { cat "$work/floor.log"; echo "FAIL: the floor's error line"; exit 1; }
[ "$(grep -c "the gradients overflowed" "$work/floor.log")" -eq 1 ] ||
  { cat "$work/floor.log"; echo "FAIL: the floor's error is not one line"; exit 1; }
echo "dynamic loss scaling: skipped on every rank, state unchanged, resumed, floor enforced"

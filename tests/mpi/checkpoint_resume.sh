#!/usr/bin/env bash
# HDF5 checkpoints: a run that resumes from a checkpoint ends where the uninterrupted run ends.
# Reference: 6 steps of a 4-rank plan, checkpoints after steps 3 and 6. Then, from step 3:
#   - the same plan: bit-identical final parameters (parameters, both AdamW moments, the step
#     counter and the data position all come back);
#   - another plan on 4 ranks, and one rank: equal to float rounding (compare_runs.py, 1e-5);
# the step-6 file holds every tensor of the model once per group, its parameters exactly those
# the run saved; and resuming from a wrong file ends with one error line naming it.
#   checkpoint_resume.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
tiny_job 6
four=(--topology "$plans/cpu-2nodes-4.yaml")
run reference 4 "${four[@]}" --plan "$plans/two-depths-4.yaml" --checkpoint-every 3
checkpoint="$work/reference/checkpoints/step_3.h5"

run same_plan 4 "${four[@]}" --plan "$plans/two-depths-4.yaml" --resume "$checkpoint"
grep "resumed from" "$work/same_plan.log"
cmp "$work/reference.bin" "$work/same_plan.bin"
echo "same plan, resumed after step 3: final parameters bit-identical to the uninterrupted run"

run other_plan 4 "${four[@]}" --plan "$plans/split-stage-4.yaml" --resume "$checkpoint"
echo "another plan (split-stage-4), resumed after step 3:"
$py "$src/tests/mpi/compare_runs.py" "$work/reference" "$work/reference.bin" "$work/other_plan" "$work/other_plan.bin"
run one_rank 1 --batch 10 --micro-batch 5 --resume "$checkpoint"
echo "one rank, resumed after step 3:"
$py "$src/tests/mpi/compare_runs.py" "$work/reference" "$work/reference.bin" "$work/one_rank" "$work/one_rank.bin"

$py - "$src" "$work/reference/checkpoints/step_6.h5" "$work/reference.bin" <<'PY'
import sys, h5py, numpy as np
sys.path.insert(0, f"{sys.argv[1]}/tests/mpi")
from compare_runs import layout
f = h5py.File(sys.argv[2], "r")
assert f.attrs["format"] == b"eth-checkpoint" and f.attrs["step"] == 6, dict(f.attrs)
names = [t["name"] for t in layout(sys.argv[3])["tensors"]]
for group in ("params", "adam_m", "adam_v"):
    assert sorted(f[group].keys()) == sorted(names), f"{group}: {sorted(f[group].keys())}"
saved = np.fromfile(sys.argv[3], dtype=np.float32)
stored = np.concatenate([f["params"][n][()].ravel() for n in names])
assert stored.dtype == np.float32 and np.array_equal(stored, saved), "params differ from --save-params"
# Moments: every tensor has been updated (the bit-identical resume above shows they are right).
assert all(f["adam_v"][n][()].max() > 0 and np.abs(f["adam_m"][n][()]).max() > 0 for n in names), "moments not written"
print(f"step_6.h5: {len(names)} tensors in each of params, adam_m, adam_v; params equal --save-params bit for bit")
PY

# Wrong files: one error line naming the file and what was expected, exit 1.
set +e
source "$src/tests/cli/cli_checks.sh"
train() { timeout 120 mpirun -np 1 "$build/app/eth_train" --train-data "$work/data.bin" --seq-len 16 --batch 10 \
  --micro-batch 5 --output-dir "$work/bad" "$@"; }
expect_one_error eth_train "a checkpoint of another model" "$checkpoint" "num_layers" -- \
  train --model "$src/inputs/models/tiny.yaml" --steps 6 --resume "$checkpoint"
expect_one_error eth_train "not a checkpoint (no seal beside it)" "$work/data.bin: checksum" -- \
  train --model "$model" --steps 6 --resume "$work/data.bin"
expect_one_error eth_train "a missing file" "$work/absent.h5: checkpoint" -- \
  train --model "$model" --steps 6 --resume "$work/absent.h5"
expect_one_error eth_train "no steps left after the checkpoint" "--steps" "more than the 3 steps" -- \
  train --model "$model" --steps 3 --resume "$checkpoint"
expect_one_error eth_train "a negative checkpoint interval" "--checkpoint-every" -- \
  train --model "$model" --steps 6 --checkpoint-every -1
finish

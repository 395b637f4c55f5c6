#!/usr/bin/env bash
# Checkpoints of sharded optimizer state (--shard-optimizer, lib/plan/optimizer_shards.hpp) stay
# plan-independent: the moments of a sharded block are gathered to its writer, so the file is the
# one an unsharded run writes. 6 steps, checkpoints after steps 3 and 6; from step 3:
#   - sharded, the same plan: final parameters bit-identical to the uninterrupted sharded run
#     (parameters, both moments of every shard, the step and the data position come back);
#   - unsharded, another plan: equal to float rounding (compare_runs.py, 1e-5);
#   - the reverse: an unsharded run's checkpoint resumed sharded on another plan, against the
#     uninterrupted unsharded run;
#   - sharding chosen by the plan (partly-sharded-4: sharded_blocks [0, 2] of three blocks):
#     resumed under the same plan, and under its stages without sharded_blocks, both compared
#     with the uninterrupted partly sharded run.
#   sharded_checkpoint.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
tiny_job 6
four=(--topology "$plans/cpu-2nodes-4.yaml")
expect_sharded() {  # the run really kept sharded moments
  grep -q "AdamW moments sharded" "$work/$1.log" || { echo "FAIL: $1's log does not say its moments are sharded"; exit 1; }
}

# Every block of data-parallel-4 has 4 owners across the 2 declared nodes.
run sharded 4 "${four[@]}" --plan "$plans/data-parallel-4.yaml" --shard-optimizer --checkpoint-every 3
expect_sharded sharded
run sharded_again 4 "${four[@]}" --plan "$plans/data-parallel-4.yaml" --shard-optimizer \
  --resume "$work/sharded/checkpoints/step_3.h5"
expect_sharded sharded_again
cmp "$work/sharded.bin" "$work/sharded_again.bin"
echo "sharded, same plan, resumed after step 3: final parameters bit-identical to the uninterrupted run"

run unsharded_other 4 "${four[@]}" --plan "$plans/rebalance-4.yaml" --resume "$work/sharded/checkpoints/step_3.h5"
echo "written sharded (data-parallel-4), resumed unsharded on rebalance-4 after step 3:"
$py "$src/tests/mpi/compare_runs.py" "$work/sharded" "$work/sharded.bin" "$work/unsharded_other" "$work/unsharded_other.bin"

run unsharded 4 "${four[@]}" --plan "$plans/two-depths-4.yaml" --checkpoint-every 3
run sharded_other 4 "${four[@]}" --plan "$plans/split-stage-4.yaml" --shard-optimizer \
  --resume "$work/unsharded/checkpoints/step_3.h5"
expect_sharded sharded_other
echo "written unsharded (two-depths-4), resumed sharded on split-stage-4 after step 3:"
$py "$src/tests/mpi/compare_runs.py" "$work/unsharded" "$work/unsharded.bin" "$work/sharded_other" "$work/sharded_other.bin"

# The sharded run's step-6 file against the unsharded run's of the same plan: the gathered
# moments are the whole tensors (a shard left out would be zeros), equal to float rounding.
run unsharded_dp 4 "${four[@]}" --plan "$plans/data-parallel-4.yaml" --checkpoint-every 6
$py - "$work/sharded/checkpoints/step_6.h5" "$work/unsharded_dp/checkpoints/step_6.h5" <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
for group in ("params", "adam_m", "adam_v"):
    assert sorted(a[group].keys()) == sorted(b[group].keys()), group
    x = np.concatenate([a[group][n][()].ravel() for n in sorted(a[group].keys())]).astype(np.float64)
    y = np.concatenate([b[group][n][()].ravel() for n in sorted(b[group].keys())]).astype(np.float64)
    # Relative to the group's norm: the runs sum gradients in different orders (sums to the
    # shards' owners vs the hierarchical all-reduce), float rounding amplified over 6 steps, as
    # compare_runs.py's parameter criterion; zeros where a shard was lost would be ~1.
    rel = np.linalg.norm(x - y) / np.linalg.norm(y)
    print(f"step_6.h5 {group}: sharded vs unsharded, relative difference {rel:.3e} (tolerance 1e-5)")
    assert rel < 1e-5, group
PY

# Sharding from the plan's field, no --shard-optimizer. The resumed run under the same stages
# takes the checkpoint's batch split only, not its sharded_blocks: its log must not say sharded.
# Bit-identical even unsharded: every block has 2 owners, so its sum is one addition either way
# (to the shard's owner or to both) and AdamW is elementwise; the norm is summed in other groups
# sharded and unsharded, so clipping is off (--grad-clip 0) to keep its rounding out of the update.
partly_plan=(--plan "$plans/partly-sharded-4.yaml" --grad-clip 0)
run partly 4 "${four[@]}" "${partly_plan[@]}" --checkpoint-every 3
grep -q "AdamW moments sharded in 1 block(s)" "$work/partly.log" ||
  { echo "FAIL: partly's log does not say that rank 0 shards one of its two blocks"; exit 1; }
run partly_again 4 "${four[@]}" "${partly_plan[@]}" --resume "$work/partly/checkpoints/step_3.h5"
cmp "$work/partly.bin" "$work/partly_again.bin"
echo "partly sharded by the plan, resumed after step 3 under it: final parameters bit-identical to the uninterrupted run"
grep -v "^sharded_blocks:" "$plans/partly-sharded-4.yaml" > "$work/unsharded-stages-4.yaml"
run partly_unsharded 4 "${four[@]}" --plan "$work/unsharded-stages-4.yaml" --grad-clip 0 --resume "$work/partly/checkpoints/step_3.h5"
if grep -q "AdamW moments sharded" "$work/partly_unsharded.log"; then
  echo "FAIL: resumed under a plan without sharded_blocks, the run still shards"; exit 1
fi
cmp "$work/partly.bin" "$work/partly_unsharded.bin"
echo "partly sharded by the plan, resumed after step 3 unsharded on the same stages: final parameters bit-identical"

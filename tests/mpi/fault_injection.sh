#!/usr/bin/env bash
# Injected faults (lib/runtime/fault_injection.hpp) on 4 ranks of tiny-4l (two-depths-4: rank 0 alone in
# one pipeline, ranks 1-3 the stages of another; blocks 0, 1, 2 owned by {0,1}, {0,2}, {0,3}),
# 8 steps with a checkpoint every 2. Each fault must end the job non-zero with a line naming the
# rank and the phase (a NaN: the step and the block; a hang: the collective and the rank that
# did not arrive, through the watchdog); then `--resume latest` must load the last complete
# checkpoint and end with every step's loss equal, bit for bit, to an uninterrupted run's.
# The seconds from launch to exit are printed; only the ctest timeout bounds them (no assertion
# on wall time).
#   fault_injection.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
tiny_job 8
common+=(--topology "$plans/cpu-2nodes-4.yaml" --plan "$plans/two-depths-4.yaml" --checkpoint-every 2)
set -e
run reference 4
set +e

# losses_equal NAME: every step's loss in NAME's metrics equals the reference's exactly.
losses_equal() {
  $py - "$work/reference/metrics.jsonl" "$work/$1/metrics.jsonl" <<'PY'
import json, sys
def losses(path):
    return {r["step"]: r["loss"] for r in map(json.loads, open(path)) if "loss" in r}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
sys.exit(0 if a == b and len(a) == 8 else f"reference {a}\nresumed   {b}")
PY
}

# fault NAME SPEC RESUMED_AFTER PATTERN [ARGS...]: the job with --inject-fault SPEC ends
# non-zero with a line matching PATTERN (grep -E); `--resume latest` continues after step
# RESUMED_AFTER and ends with the reference's losses.
fault() {
  local name=$1 spec=$2 after=$3 pattern=$4 start rc elapsed
  shift 4
  start=$(date +%s.%N)
  launch_mpi 120 4 "$build/app/eth_train" "${common[@]}" --output-dir "$work/$name" --inject-fault "$spec" "$@" \
    > "$work/$name.log" 2>&1
  rc=$?
  elapsed=$($py -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
  check "$spec: the job ends non-zero (exit $rc, ${elapsed} s from launch)" $? "$(tail -5 "$work/$name.log")"
  grep -qE "$pattern" "$work/$name.log"
  check "$spec: its line names $(echo "$pattern" | cut -c1-60)..." $? "$(grep eth_train "$work/$name.log")"
  [ "$name" != truncated ] || write_tiny_shard "$work/data.bin" 7  # the data restored
  launch_mpi 120 4 "$build/app/eth_train" "${common[@]}" --output-dir "$work/$name" --resume latest \
    > "$work/$name.resume.log" 2>&1
  grep -q "resumed from .*step_$after.h5 after step $after" "$work/$name.resume.log" && losses_equal "$name"
  check "$spec: --resume latest continues after step $after, losses bit-identical to the uninterrupted run" $? \
    "$(grep -E "resumed|error|eth_train" "$work/$name.resume.log"; losses_equal "$name" 2>&1)"
}

f='injected fault \(--inject-fault'
fault abort_forward abort:rank=2:step=5:phase=forward 4 "rank 2: $f abort in forward of step 5\): MPI_Abort"
fault abort_backward abort:rank=0:step=5:phase=backward 4 "rank 0: $f abort in backward of step 5\)"
fault abort_reduction abort:rank=3:step=5:phase=reduction 4 "rank 3: $f abort in reduction of step 5\)"
fault abort_checkpoint abort:rank=1:step=4:phase=checkpoint 2 "rank 1: $f abort in checkpoint of step 4\)"
fault kill_backward kill:rank=1:step=5:phase=backward 4 "rank 1: $f kill in backward of step 5\): SIGKILL"
# SIGKILL between a rank's dataset writes: the step-4 checkpoint never becomes visible.
fault kill_checkpoint kill:rank=2:step=4:phase=checkpoint 2 "rank 2: $f kill in checkpoint of step 4\): SIGKILL"
fault nan nan:rank=2:step=5:block=1 4 \
  "error: step 5: loss [0-9.]+, gradient norm nan: not finite in the gradient of block 1 \(layers 1-2\); the step was not applied"
fault truncated truncate-shard:rank=1:step=5 4 \
  "rank [0-3] \(step 5, forward\): $work/data.bin: tokens .*short read .*changed under the running job"
# Rank 2 never joins block 1's sum, which only rank 0 shares with it: rank 0's watchdog names it.
fault hang_reduction hang:rank=2:step=5:phase=reduction 4 \
  "rank 0 \(step 5, reduction\): watchdog: reduction of block 1 \(layers 1-2\) not complete after 3 s; did not arrive: rank 2 \(no answer" \
  --collective-timeout 3
fault hang_backward hang:rank=2:step=5:phase=backward 4 \
  "watchdog: .* not complete after 3 s; did not arrive: .*rank 2 \(no answer" --collective-timeout 3
fault hang_checkpoint hang:rank=3:step=6:phase=checkpoint 4 \
  "watchdog: the sum of the checkpoint's checksums not complete after 3 s; did not arrive: rank 3 \(no answer" \
  --collective-timeout 3

# A fault that cannot happen in this job is refused, naming the option.
expect_one_error eth_train "a NaN into a block the rank does not hold is refused" \
  "--inject-fault: block: expected a gradient block rank 1 holds (0, of blocks 0 to 2" -- \
  launch_mpi 60 4 "$build/app/eth_train" "${common[@]}" --output-dir "$work/bad" --inject-fault nan:rank=1:step=3:block=1
finish

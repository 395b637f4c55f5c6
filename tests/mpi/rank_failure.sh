#!/usr/bin/env bash
# Faults end the whole job: a rank that aborts mid-step takes every rank down, non-zero, within
# 30 s, with its message; a diverging run stops at the first non-finite step, naming it.
#   rank_failure.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
write_tiny_shard "$work/data.bin" 3
common=(--model "$src/inputs/models/tiny-4l.yaml" --train-data "$work/data.bin" --seq-len 16 --output-dir "$work/out")

start=$(date +%s)
timeout 120 mpirun -np 4 "$build/app/eth_train" "${common[@]}" --topology "$src/tests/mpi/plans/cpu-2nodes-4.yaml" \
  --plan "$src/tests/mpi/plans/split-stage-4.yaml" --steps 20 --inject-fault abort:rank=2:step=3:phase=backward >"$work/log" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; check "an aborting rank ends the job non-zero (exit $rc)" $? "$(tail -5 "$work/log")"
[ "$elapsed" -le 30 ]; check "within 30 s (took ${elapsed} s)" $? "took ${elapsed} s"
grep -q "rank 2: injected fault (--inject-fault abort in backward of step 3)" "$work/log"; check "the failing rank's message is shown" $? "$(tail -5 "$work/log")"

timeout 120 mpirun -np 1 "$build/app/eth_train" "${common[@]}" --batch 4 --micro-batch 4 --steps 50 \
  --lr 1e6 --grad-clip 0 >"$work/log" 2>&1
rc=$?
[ "$rc" -eq 1 ]; check "a diverging run stops with exit 1 (exit $rc)" $? "$(tail -3 "$work/log")"
grep -qE "eth_train: error: step [0-9]+: loss .*not finite( in the gradient of [^;]*)?; the step was not applied" "$work/log"
check "the message names the step" $? "$(tail -3 "$work/log")"

finish

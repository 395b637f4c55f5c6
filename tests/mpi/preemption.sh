#!/usr/bin/env bash
# Nothing lost to preemption or a crash (docs/usage.md, "Preemption and time limits"). Reference:
# 400 uninterrupted steps of a 4-rank plan (a few ms each: long enough to signal it mid-run). Then, each ending bit-identical to the reference's
# final parameters:
#   - SIGUSR1 to mpirun while it trains: every rank stops after the same step, a checkpoint is
#     written, the job exits 0; `--resume latest` continues it;
#   - the newest checkpoint damaged (bytes overwritten): `--resume latest` says so and falls back
#     to the previous one;
#   - SIGKILL of one rank while the job checkpoints every step: no damaged checkpoint is ever
#     visible (a write in progress is only a .tmp file), and `--resume latest` continues;
# and --keep-checkpoints keeps the newest N, and a checkpoint of another global batch is refused.
#   preemption.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
source "$src/tests/mpi/signal_job.sh"

# 1. SIGUSR1 to mpirun: it forwards the signal to every rank and waits for them.
start preempted --checkpoint-every 20 --keep-checkpoints 3
after_step preempted 50
mpirun_pid=$(pgrep -P "$job" -x mpirun)
kill -USR1 "$mpirun_pid"
wait "$job"
rc=$?
stopped=$(sed -n 's/^stopped by signal 10 after step \([0-9]*\) of.*/\1/p' "$work/preempted.log")
[ "$rc" -eq 0 ] && [ -n "$stopped" ] && [ "$stopped" -lt $steps ] \
  && [ "$(cat "$work/preempted/checkpoints/latest")" = "step_$stopped.h5" ]
check "SIGUSR1: every rank stops after step ${stopped:-?}, checkpoints it and exits 0" $? "exit $rc: $(tail -5 "$work/preempted.log")"
kept=$(ls "$work/preempted/checkpoints" | grep -c '^step_[0-9]*\.h5$')
[ "$kept" -eq 3 ] && ! ls "$work/preempted/checkpoints" | grep -q '\.tmp$'
check "--keep-checkpoints 3 keeps the newest 3, no .tmp left" $? "$(ls "$work/preempted/checkpoints")"

start preempted --resume latest
wait "$job"
grep -q "resumed from $work/preempted/checkpoints/step_$stopped.h5 after step $stopped" "$work/preempted.log" \
  && cmp -s "$work/reference.bin" "$work/preempted.bin"
check "--resume latest continues it: final parameters bit-identical to the uninterrupted run" $? \
  "$(grep -E "resumed|error" "$work/preempted.log")"

# 2. The newest checkpoint damaged: the previous one is used, and said so.
complete=($(ls "$work/preempted/checkpoints" | sed -n 's/^step_\([0-9]*\)\.h5$/\1/p' | sort -n))
newest="$work/preempted/checkpoints/step_${complete[-1]}.h5" previous=${complete[-2]}
size=$(stat -c %s "$newest")
printf '\xff\xff\xff\xff\xff\xff\xff\xff' | dd of="$newest" bs=1 seek=$((size / 2)) conv=notrunc 2> /dev/null
start preempted --resume latest
wait "$job"
grep -q "checkpoint $newest is damaged: .*checksum.*; trying .*step_$previous.h5" "$work/preempted.log" \
  && grep -q "resumed from .*step_$previous.h5 after step $previous" "$work/preempted.log" \
  && cmp -s "$work/reference.bin" "$work/preempted.bin"
check "a damaged newest checkpoint: --resume latest names it, resumes after step $previous, ends bit-identical" $? \
  "$(grep -E "damaged|resumed|error" "$work/preempted.log")"

# 3. SIGKILL of one rank while every step writes a checkpoint.
start killed --checkpoint-every 1
after_step killed 30
kill -KILL "$(pgrep -P "$(pgrep -P "$job" -x mpirun)" -x eth_train | tail -1)"
wait "$job"
rc=$?
[ "$rc" -ne 0 ] && [ -f "$work/killed/checkpoints/latest" ]
check "SIGKILL of one rank ends the job non-zero, with a latest checkpoint" $? "exit $rc: $(tail -3 "$work/killed.log")"
echo "(the kill left a partial write behind: $(ls "$work/killed/checkpoints" | grep -c '\.tmp$') .tmp file(s))"
start killed --resume latest
wait "$job"
grep -q "resumed from" "$work/killed.log" && ! grep -q "damaged" "$work/killed.log" \
  && cmp -s "$work/reference.bin" "$work/killed.bin"
check "--resume latest after the kill: the latest checkpoint is whole, final parameters bit-identical" $? \
  "$(grep -E "damaged|resumed|error" "$work/killed.log")"

# 4. Another global batch: refused with one line (the sample stream would skip or repeat).
expect_one_error eth_train "a checkpoint of another global batch" "global_batch" "resume with the checkpoint's global batch" -- \
  timeout 120 mpirun -np 1 "$build/app/eth_train" --model "$model" --train-data "$work/data.bin" --seq-len 16 \
  --steps $steps --batch 6 --micro-batch 3 --output-dir "$work/preempted" --resume latest
expect_one_error eth_train "--resume latest without checkpoints" "--resume: latest" "complete checkpoint" -- \
  timeout 120 mpirun -np 1 "$build/app/eth_train" --model "$model" --train-data "$work/data.bin" --seq-len 16 \
  --steps $steps --output-dir "$work/empty" --resume latest
expect_one_error eth_train "a negative --keep-checkpoints" "--keep-checkpoints" -- \
  timeout 120 mpirun -np 1 "$build/app/eth_train" --model "$model" --train-data "$work/data.bin" --seq-len 16 \
  --output-dir "$work/empty" --keep-checkpoints -2
finish

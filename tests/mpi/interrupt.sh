#!/usr/bin/env bash
# Ctrl-C on a workstation (docs/usage.md, "Ctrl-C"). Open MPI 4.1's mpirun does not forward
# SIGINT (ess_base_forward_signals refuses it): it sends every rank SIGCONT, then SIGTERM after
# odls_base_sigkill_timeout seconds (default 1), then SIGKILL after as many again. eth_train
# treats SIGTERM like SIGUSR1, so the job stops after the step in progress with a checkpoint if
# that fits in the window; whatever happens, `--resume latest` continues from the newest complete
# checkpoint and ends bit-identical to an uninterrupted run. Cases, each against the reference:
#   1. SIGINT to mpirun, Open MPI's defaults: no rank outlives mpirun; resume is bit-identical;
#   2. SIGINT to mpirun with a 2 s window: every rank stops after the same step, checkpoints it
#      (not longer: mpirun stops reading the ranks' output while it ends the job, and rank 0
#      blocks on a full pipe after some 150 step lines, a few seconds of this model's steps);
#   3. SIGINT to eth_train run without mpirun (one rank): the same stop, exit 0.
#   interrupt.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
source "$src/tests/mpi/signal_job.sh"

# interrupt NAME: SIGINT to the job's mpirun at step 50; sets $rc, $stopped (the step the ranks
# stopped after, empty if they were killed first) and $orphans (ranks alive after mpirun ended).
interrupt() {
  after_step "$1" 50
  local mpirun_pid ranks
  mpirun_pid=$(pgrep -P "$job" -x mpirun)
  ranks=$(pgrep -P "$mpirun_pid" -x eth_train)
  kill -INT "$mpirun_pid"
  wait "$job"
  rc=$?
  # A clean stop checkpoints the last step metrics.jsonl records (mpirun may drop the ranks' last
  # lines of output while it ends the job, so the log is no witness).
  local last
  last=$(grep -c '"loss"' "$work/$1/metrics.jsonl")
  stopped=""
  [ "$(cat "$work/$1/checkpoints/latest" 2> /dev/null)" != "step_$last.h5" ] || stopped=$last
  local waited=0  # ranks ending (or SIGKILLed) right after mpirun returns are not orphans
  while orphans=$(for pid in $ranks; do kill -0 "$pid" 2> /dev/null && echo "$pid"; done | wc -l) \
        && [ "$orphans" -gt 0 ] && [ $waited -lt 100 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  echo "($1: mpirun exited $rc; $orphans rank(s) alive $((waited / 10)).$((waited % 10)) s later)"
}
# resumes NAME: `--resume latest` ends with the reference's final parameters.
resumes() {
  start "$1" --resume latest
  wait "$job"
  grep -q "resumed from .*after step" "$work/$1.log" && cmp -s "$work/reference.bin" "$work/$1.bin"
}

# 1. Open MPI's defaults: a clean stop when step and checkpoint fit in a second, SIGKILL if not.
start default --checkpoint-every 20
interrupt default
[ "$rc" -ne 124 ] && [ "$orphans" -eq 0 ]
check "SIGINT to mpirun: the job ends (mpirun exit $rc), no rank left running" $? "orphans $orphans: $(tail -3 "$work/default.log")"
echo "(default window: $([ -n "$stopped" ] && echo "the ranks stopped after step $stopped with a checkpoint" \
  || echo "SIGKILL came first; latest is $(cat "$work/default/checkpoints/latest" 2> /dev/null)"))"
resumes default
check "--resume latest after SIGINT: final parameters bit-identical to the uninterrupted run" $? \
  "$(grep -E "resumed|error" "$work/default.log")"

# 2. A 2 s window (OMPI_MCA_odls_base_sigkill_timeout, docs/usage.md): a clean stop even when
# the checkpoint is slow.
export OMPI_MCA_odls_base_sigkill_timeout=2
start windowed --checkpoint-every 20
unset OMPI_MCA_odls_base_sigkill_timeout
interrupt windowed
[ -n "$stopped" ] && [ "$stopped" -lt $steps ] && [ "$orphans" -eq 0 ]
check "SIGINT to mpirun with a 2 s window: every rank gets SIGTERM, stops after step ${stopped:-?} and checkpoints it (mpirun exit $rc)" $? \
  "orphans $orphans, latest $(cat "$work/windowed/checkpoints/latest"), $(ls "$work/windowed/checkpoints" | tr '\n' ' ')"
resumes windowed
check "--resume latest continues it bit-identically" $? "$(grep -E "resumed|error" "$work/windowed.log")"

# 3. One rank without mpirun: SIGINT reaches eth_train itself.
one=(--model "$model" --train-data "$work/data.bin" --seq-len 16 --steps $steps --lr 1e-2 --warmup 1 --seed 42)
"$build/app/eth_train" "${one[@]}" --output-dir "$work/single" --save-params "$work/single.bin" > "$work/single.log" 2>&1 &
job=$!
after_step single 50
kill -INT "$job"
wait "$job"
rc=$?
stopped=$(sed -n 's/^stopped by signal 2 after step \([0-9]*\) of.*/\1/p' "$work/single.log")
[ "$rc" -eq 0 ] && [ -n "$stopped" ] && [ "$(cat "$work/single/checkpoints/latest")" = "step_$stopped.h5" ]
check "SIGINT to eth_train without mpirun: stops after step ${stopped:-?}, checkpoints it, exits 0" $? \
  "exit $rc: $(tail -3 "$work/single.log")"
finish

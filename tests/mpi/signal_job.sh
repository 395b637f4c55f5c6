# Sourced by the signal tests (preemption.sh, interrupt.sh) after mpi_test_env.sh and
# cli_checks.sh: the reference, 400 uninterrupted steps of a 4-rank plan of the tiny model (a few
# ms each: long enough to signal it mid-run), in $work/reference(.bin); $steps; and a way to run
# the same job in the background and wait for a step.
steps=400
tiny_job $steps
common+=(--topology "$plans/cpu-2nodes-4.yaml" --plan "$plans/two-depths-4.yaml")
set -e
run reference 4
set +e

# start NAME ARGS...: eth_train in the background on 4 ranks, output in $work/NAME; sets $job.
start() {
  local name=$1
  shift
  timeout 300 mpirun -np 4 "$build/app/eth_train" "${common[@]}" --output-dir "$work/$name" \
    --save-params "$work/$name.bin" "$@" > "$work/$name.log" 2>&1 &
  job=$!
}
# after_step NAME N: waits until NAME's metrics show N steps (or its job ended).
after_step() {
  while kill -0 "$job" 2> /dev/null && [ "$(cat "$work/$1/metrics.jsonl" 2> /dev/null | grep -c '"loss"')" -lt "$2" ]; do
    sleep 0.02
  done
}

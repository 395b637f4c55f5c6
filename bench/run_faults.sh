#!/usr/bin/env bash
# Faults and what they cost (docs/results.md, "Faults"): each is injected into a 4-rank run of
# the tiny-4l model (tests/mpi/plans/two-depths-4.yaml, 400 steps, a checkpoint every 20) once
# it logged step 50 (--inject-fault faults fire in step 51, or at the step-60 checkpoint); measured: the exit status, the seconds from the injection to the end of mpirun, the
# step `--resume latest` continues after, and what was lost (steps run but not in that
# checkpoint). Writes bench/results/faults.json.
#   bash bench/run_faults.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)
build=${1:-build} src=$PWD
source tests/mpi/mpi_test_env.sh
results=()

# launch NAME STEPS ARGS...: 4 ranks of tiny-4l on two-depths-4, a checkpoint every 20 steps.
launch() {
  local name=$1
  tiny_job "$2"
  shift 2
  timeout 300 mpirun -np 4 "$build/app/eth_train" "${common[@]}" --topology "$src/tests/mpi/plans/cpu-2nodes-4.yaml" \
    --plan "$src/tests/mpi/plans/two-depths-4.yaml" --checkpoint-every 20 --output-dir "$work/$name" "$@"
}

# record NAME STEPS HOW INJECT [ARGS...]: runs the job, calls INJECT (given mpirun's pid and the
# output folder) once 50 steps are logged, then resumes with --resume latest (400 steps) and
# notes after which step it continued.
record() {
  local name=$1 steps=$2 how=$3 inject=$4
  shift 4
  launch "$name" "$steps" "$@" > "$work/$name.log" 2>&1 &
  local job=$!
  while kill -0 $job 2> /dev/null && [ "$(cat "$work/$name/metrics.jsonl" 2> /dev/null | grep -c '"loss"')" -lt 50 ]; do
    sleep 0.02
  done
  local t0 t1 rc ran resumed
  t0=$(date +%s.%N)
  $inject "$(pgrep -n -x mpirun)" "$work/$name"
  wait $job
  rc=$?
  t1=$(date +%s.%N)
  ran=$(grep -c '"loss"' "$work/$name/metrics.jsonl")
  launch "$name" 400 --resume latest > "$work/$name.resume.log" 2>&1
  resumed=$(sed -n 's/^resumed from .* after step \([0-9]*\).*/\1/p' "$work/$name.resume.log")
  results+=("$($py -c 'import json,sys; n,h,rc,t0,t1,ran,res=sys.argv[1:]; print(json.dumps({"fault": n, "how": h, "exit": int(rc), "seconds_to_exit": round(float(t1) - float(t0), 2), "steps_run": int(ran), "resumed_after": int(res or -1), "steps_lost": int(ran) - int(res or 0)}))' \
    "$name" "$how" $rc "$t0" "$t1" "$ran" "$resumed")")
  echo "${results[-1]}"
}

usr1() { kill -USR1 "$1"; }
term_one_rank() { kill -TERM "$(pgrep -P "$1" -x eth_train | head -1)"; }
kill_one_rank() { kill -KILL "$(pgrep -P "$1" -x eth_train | tail -1)"; }
nothing() { :; }
damage_newest() {  # after the job ended: bytes of the newest checkpoint overwritten
  wait_until_ended "$1"
  local newest="$2/checkpoints/$(cat "$2/checkpoints/latest")" size
  size=$(stat -c %s "$newest")
  printf '\xff\xff\xff\xff\xff\xff\xff\xff' | dd of="$newest" bs=1 seek=$((size / 2)) conv=notrunc 2> /dev/null
}
truncate_newest() {
  wait_until_ended "$1"
  local newest="$2/checkpoints/$(cat "$2/checkpoints/latest")"
  truncate -s $(($(stat -c %s "$newest") / 2)) "$newest"
}
wait_until_ended() { while kill -0 "$1" 2> /dev/null; do sleep 0.05; done; }

record sigusr1 400 "SIGUSR1 to mpirun (what the sbatch script forwards before a time limit)" usr1
record sigterm 400 "SIGTERM to one rank (what Slurm sends srun's tasks on scancel)" term_one_rank
record sigkill 400 "SIGKILL of one rank" kill_one_rank
f=--inject-fault
record abort 400 "rank 2 aborts in the backward of step 51 ($f abort:rank=2:step=51:phase=backward)" nothing \
  $f abort:rank=2:step=51:phase=backward
record kill_in_checkpoint 400 "rank 2 SIGKILLs itself between its dataset writes of the step-60 checkpoint ($f kill:rank=2:step=60:phase=checkpoint)" \
  nothing $f kill:rank=2:step=60:phase=checkpoint
record nan 400 "a NaN in block 1's gradient on rank 2 in step 51 ($f nan:rank=2:step=51:block=1)" nothing \
  $f nan:rank=2:step=51:block=1
record truncate_shard 400 "rank 1 cuts the training shard to half at step 51 ($f truncate-shard:rank=1:step=51; the resume writes it anew)" \
  nothing $f truncate-shard:rank=1:step=51
record hang 400 "rank 2 hangs in the reduction of step 51, watchdog at 5 s ($f hang:rank=2:step=51:phase=reduction --collective-timeout 5)" \
  nothing $f hang:rank=2:step=51:phase=reduction --collective-timeout 5
record damaged 57 "the run ends after step 57; then the newest checkpoint's bytes are overwritten" damage_newest
record truncated 57 "the run ends after step 57; then the newest checkpoint is cut to half its size" truncate_newest

mkdir -p bench/results
printf '%s\n' "${results[@]}" | $py -c 'import json,sys; json.dump({"benchmark": "faults", "runs": [json.loads(l) for l in sys.stdin]}, open("bench/results/faults.json", "w"), indent=2)'
$py bench/stamp.py bench/results/faults.json "$load_at_start"
echo "wrote bench/results/faults.json"

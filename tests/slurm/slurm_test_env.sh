# Sourced by the Slurm tests after they set `build` and `src`: skips (exit 77) without root or
# Slurm; the MPI tests' environment ($work, write_tiny_shard), the checks, and what the tests
# share once their cluster runs (slurm/local-cluster/start.sh): submitting eth_train.sbatch on the
# test's allocation and the preemption check. Slurm clients go through eth_slurm_client (start.sh),
# which runs them in an emulated cluster's head namespace.
if [ "$(id -u)" -ne 0 ] || ! command -v slurmctld > /dev/null || ! command -v munged > /dev/null; then
  echo "SKIP: needs root, slurmctld and munged (scripts/setup.sh installs slurm-wlm and munge)"
  exit 77
fi
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
export ETH_SLURM_PORT=$((20000 + RANDOM % 20000))
# Ended by a signal (ctest's timeout, ^C), the test still runs its EXIT trap: daemons, namespaces.
trap 'exit 143' TERM INT

# eth_sbatch NAME [SBATCH OPTIONS] -- ARGS...: slurm/eth_train.sbatch MODEL ARGS on the test's
# "${allocation[@]}" (sbatch's allocation options: tasks, partitions, hetjob components), the
# tiny-4l model, a global batch of 8; output in $work/NAME.out, ETH_OUT $work/NAME.
eth_sbatch() {
  local name=$1 options=()
  shift
  while [ "$1" != "--" ]; do options+=("$1"); shift; done
  shift
  eth_slurm_client env ETH_ROOT="$src" ETH_BUILD="$build" ETH_OUT="$work/$name" ETH_BATCH=8 ETH_SEQ_LEN=16 \
    timeout 180 sbatch "${options[@]}" -o "$work/$name.out" "${allocation[@]}" "$src/slurm/eth_train.sbatch" \
    "$src/inputs/models/tiny-4l.yaml" "$@"
}
# job_field ID FIELD: FIELD of job ID (of its first component, for a heterogeneous job).
job_field() { eth_slurm_client scontrol show job "$1" | grep -o "$2=[^ ]*" | head -1 | cut -d= -f2; }
# wait_job ID: until job ID has ended; 0 when it completed, 1 when it ended otherwise, 124 when
# it had not ended after 3 minutes.
# Polled every 0.2 s: `sbatch --wait` polls too, but took up to 10 s to see a job's end.
wait_job() {
  local state
  for _ in $(seq 900); do
    state=$(job_field "$1" JobState)
    case "$state" in
      COMPLETED) return 0 ;;
      FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED) return 1 ;;
    esac
    sleep 0.2
  done
  return 124
}
submit() {  # submit NAME ARGS...: waits for the job; its status is the job's (0: completed)
  local name=$1 id
  shift
  id=$(eth_sbatch "$name" --parsable -- "$@") || return 1
  wait_job "${id%%;*}"
}

# check_short_job TOPOLOGY: a 4-step job ($work/job) runs the sbatch script's whole flow:
# eth_topo (under srun, or mpirun in a heterogeneous job) finds TOPOLOGY ("2 ranks on 1 node(s)"), eth_plan plans it, eth_train trains
# 4 steps on that plan and writes its checkpoint.
check_short_job() {
  submit job "$work/data.bin" --steps 4 --checkpoint-every 4
  check "the batch job exits 0" $? "$(tail -20 "$work/job.out")"
  grep -qF "$1" "$work/job.out"
  check "eth_topo sees $1" $? "$(head -5 "$work/job.out")"
  [ -f "$work/job/plan.yaml" ] && grep -q "^#1 plan: " "$work/job/plan.txt"
  check "eth_plan plans the allocation" $? "$(cat "$work/job/plan.txt" 2> /dev/null)"
  [ "$(grep -c '"loss"' "$work/job/metrics.jsonl" 2> /dev/null)" = 4 ]
  check "eth_train runs the plan for 4 steps" $? "$(tail -8 "$work/job.out")"
  [ -f "$work/job/checkpoints/step_4.h5" ]
  check "and writes its checkpoint" $? "$(ls -R "$work/job")"
}

# check_preemption ARGS...: USR1 to the batch script mid-run (what its --signal=B:USR1@120 makes
# Slurm send before a time limit): every rank checkpoints after the same step, the script
# requeues the job, and the requeued job resumes from the latest checkpoint. It must end like an
# uninterrupted job of ARGS (300 steps): the same final parameters, the same loss at every step.
check_preemption() {
  local long=("$work/data.bin" --steps 300 --lr 1e-2 --seed 42 "$@") id stopped
  submit uninterrupted "${long[@]}" --save-params "$work/uninterrupted.bin"
  check "an uninterrupted 300-step job" $? "$(tail -5 "$work/uninterrupted.out")"
  id=$(eth_sbatch preempted --parsable -- "${long[@]}" --save-params "$work/preempted.bin")
  for _ in $(seq 600); do
    [ "$(cat "$work/preempted/metrics.jsonl" 2> /dev/null | grep -c '"loss"')" -ge 30 ] && break
    sleep 0.1
  done
  eth_slurm_client scancel --signal=USR1 --batch "$id"
  for _ in $(seq 120); do [ "$(job_field "$id" Restarts)" = 1 ] && break; sleep 0.5; done
  # Slurm holds a requeued job for about 2 minutes: start it now, once the second after the requeue
  # has passed. Started at once, a hetjob was twice refused by its node ("Job credential revoked",
  # the job then failed); credential times are whole seconds.
  local requeued
  requeued=$(date +%s)
  while [ "$(date +%s)" -le $((requeued + 1)) ]; do sleep 0.1; done
  eth_slurm_client scontrol update JobId="$id" StartTime=now
  wait_job "$id"
  stopped=$(sed -n 's/^stopped by signal 10 after step \([0-9]*\) of 300.*/\1/p' "$work/preempted.out")
  [ -n "$stopped" ] && grep -q "requeueing job $id" "$work/preempted.out" \
    && grep -q "resumed from $work/preempted/checkpoints/step_$stopped.h5 after step $stopped" "$work/preempted.out" \
    && [ "$(job_field "$id" JobState)" = COMPLETED ]
  check "USR1: checkpoint after step ${stopped:-?}, requeue, resume from it, complete" $? \
    "$(job_field "$id" JobState): $(grep -E "stopped|requeue|resumed|error" "$work/preempted.out")"
  cmp -s "$work/uninterrupted.bin" "$work/preempted.bin" && $py - "$work/uninterrupted" "$work/preempted" <<'PY'
import json, sys
losses = [{r["step"]: r["loss"] for r in map(json.loads, open(f"{d}/metrics.jsonl")) if "loss" in r} for d in sys.argv[1:]]
assert losses[0] == losses[1] and len(losses[1]) == 300, f"{len(losses[1])} steps, differing at {[s for s in losses[0] if losses[0][s] != losses[1].get(s)][:5]}"
PY
  check "the requeued job ends bit-identical to the uninterrupted one, every step's loss equal" $? "see above"
}

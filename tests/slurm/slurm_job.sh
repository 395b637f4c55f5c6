#!/usr/bin/env bash
# Slurm end to end: a one-machine cluster (slurm/local-cluster) runs slurm/eth_train.sbatch with
# 2 tasks, i.e. srun --mpi=pmix eth_topo, eth_plan on the discovered topology, srun eth_train on
# that plan, which must train its steps and checkpoint; a job sent USR1 mid-run checkpoints,
# requeues itself and resumes to the end an uninterrupted job reaches; a job given a missing
# data file must end non-zero with one error line naming the file. Needs root (munged runs as user munge);
# skips (exit 77) otherwise or without Slurm.
#   slurm_job.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
if [ "$(id -u)" -ne 0 ] || ! command -v slurmctld > /dev/null || ! command -v munged > /dev/null; then
  echo "SKIP: needs root, slurmctld and munged (scripts/setup.sh installs slurm-wlm and munge)"
  exit 77
fi
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
export ETH_SLURM_PORT=$((20000 + RANDOM % 20000))
trap 'bash "$src/slurm/local-cluster/stop.sh" "$work/cluster"; rm -rf "$work"' EXIT
source "$src/slurm/local-cluster/start.sh" "$work/cluster"
check "the one-machine cluster starts" $? "$(tail -n 5 "$work"/cluster/*.log)"
write_tiny_shard "$work/data.bin" 7

eth_sbatch() {  # eth_sbatch NAME [SBATCH OPTIONS] -- ARGS...: 2 tasks, output in $work/NAME.out
  local name=$1 options=()
  shift
  while [ "$1" != "--" ]; do options+=("$1"); shift; done
  shift
  ETH_ROOT=$src ETH_BUILD=$build ETH_OUT=$work/$name ETH_BATCH=8 ETH_SEQ_LEN=16 \
    timeout 180 sbatch "${options[@]}" --ntasks=2 -o "$work/$name.out" "$src/slurm/eth_train.sbatch" \
    "$src/inputs/models/tiny-4l.yaml" "$@"
}
submit() {  # submit NAME ARGS...: waits for the job
  local name=$1
  shift
  eth_sbatch "$name" --wait -- "$@" > /dev/null
}
submit job "$work/data.bin" --steps 4 --checkpoint-every 4
check "the batch job exits 0" $? "$(tail -20 "$work/job.out")"
grep -q "2 ranks on 1 node" "$work/job.out"
check "eth_topo under srun sees 2 ranks" $? "$(head -5 "$work/job.out")"
[ -f "$work/job/plan.yaml" ] && grep -q "^#1 plan: " "$work/job/plan.txt"
check "eth_plan plans the allocation" $? "$(cat "$work/job/plan.txt" 2> /dev/null)"
[ "$(grep -c '"loss"' "$work/job/metrics.jsonl" 2> /dev/null)" = 4 ]
check "eth_train runs the plan for 4 steps" $? "$(tail -8 "$work/job.out")"
[ -f "$work/job/checkpoints/step_4.h5" ]
check "and writes its checkpoint" $? "$(ls -R "$work/job")"

# Preemption: USR1 to the batch script mid-run (what its --signal=B:USR1@120 makes Slurm send
# before a time limit): every rank checkpoints after the same step, the script requeues the job,
# and the requeued job resumes from the latest checkpoint. It must end like an uninterrupted job:
# the same final parameters, the same loss at every step.
long=("$work/data.bin" --steps 300 --lr 1e-2 --seed 42)
submit uninterrupted "${long[@]}" --save-params "$work/uninterrupted.bin"
check "an uninterrupted 300-step job" $? "$(tail -5 "$work/uninterrupted.out")"
id=$(eth_sbatch preempted --parsable -- "${long[@]}" --save-params "$work/preempted.bin")
for _ in $(seq 600); do
  [ "$(cat "$work/preempted/metrics.jsonl" 2> /dev/null | grep -c '"loss"')" -ge 30 ] && break
  sleep 0.1
done
scancel --signal=USR1 --batch "$id"
state() { scontrol show job "$id" | grep -o "$1=[^ ]*" | cut -d= -f2; }
for _ in $(seq 120); do [ "$(state Restarts)" = 1 ] && break; sleep 0.5; done
scontrol update JobId="$id" StartTime=now  # Slurm holds a requeued job for about 2 minutes
for _ in $(seq 180); do [ "$(state JobState)" = COMPLETED ] && break; sleep 1; done
stopped=$(sed -n 's/^stopped by signal 10 after step \([0-9]*\) of 300.*/\1/p' "$work/preempted.out")
[ -n "$stopped" ] && grep -q "requeueing job $id" "$work/preempted.out" \
  && grep -q "resumed from $work/preempted/checkpoints/step_$stopped.h5 after step $stopped" "$work/preempted.out" \
  && [ "$(state JobState)" = COMPLETED ]
check "USR1: checkpoint after step ${stopped:-?}, requeue, resume from it, complete" $? \
  "$(state JobState): $(grep -E "stopped|requeue|resumed|error" "$work/preempted.out")"
cmp -s "$work/uninterrupted.bin" "$work/preempted.bin" && $py - "$work/uninterrupted" "$work/preempted" <<'PY'
import json, sys
losses = [{r["step"]: r["loss"] for r in map(json.loads, open(f"{d}/metrics.jsonl")) if "loss" in r} for d in sys.argv[1:]]
assert losses[0] == losses[1] and len(losses[1]) == 300, f"{len(losses[1])} steps, differing at {[s for s in losses[0] if losses[0][s] != losses[1].get(s)][:5]}"
PY
check "the requeued job ends bit-identical to the uninterrupted one, every step's loss equal" $? "see above"

submit bad "$work/absent.bin" --steps 2
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$(grep -c "eth_train: error:" "$work/bad.out")" -eq 1 ] \
  && grep -q "eth_train: error: $work/absent.bin" "$work/bad.out"
check "a missing data file fails the job with one line naming it" $? "exit $rc: $(tail -8 "$work/bad.out")"
finish

#!/usr/bin/env bash
# Slurm end to end: a one-machine cluster (slurm/local-cluster) runs slurm/eth_train.sbatch with
# 2 tasks, i.e. srun --mpi=pmix eth_topo, eth_plan on the discovered topology, srun eth_train on
# that plan, which must train its steps and checkpoint; a job given a missing data file must
# end non-zero with one error line naming the file. Needs root (munged runs as user munge);
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

submit() {  # submit NAME ARGS...: sbatch --wait with 2 tasks; the job's output in $work/NAME.out
  local name=$1
  shift
  ETH_ROOT=$src ETH_BUILD=$build ETH_OUT=$work/$name ETH_BATCH=8 ETH_SEQ_LEN=16 \
    timeout 180 sbatch --wait --ntasks=2 -o "$work/$name.out" "$src/slurm/eth_train.sbatch" \
    "$src/inputs/models/tiny-4l.yaml" "$@" > /dev/null
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

submit bad "$work/absent.bin" --steps 2
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$(grep -c "eth_train: error:" "$work/bad.out")" -eq 1 ] \
  && grep -q "eth_train: error: $work/absent.bin" "$work/bad.out"
check "a missing data file fails the job with one line naming it" $? "exit $rc: $(tail -8 "$work/bad.out")"
finish

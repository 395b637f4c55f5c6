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
source "$src/tests/slurm/slurm_test_env.sh"
trap 'bash "$src/slurm/local-cluster/stop.sh" "$work/cluster"; rm -rf "$work"' EXIT
source "$src/slurm/local-cluster/start.sh" "$work/cluster"
check "the one-machine cluster starts" $? "$(tail -n 5 "$work"/cluster/*.log)"
write_tiny_shard "$work/data.bin" 7

allocation=(--ntasks=2)
check_short_job "2 ranks on 1 node(s)"
check_preemption

submit bad "$work/absent.bin" --steps 2
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$(grep -c "eth_train: error:" "$work/bad.out")" -eq 1 ] \
  && grep -q "eth_train: error: $work/absent.bin" "$work/bad.out"
check "a missing data file fails the job with one line naming it" $? "exit $rc: $(tail -8 "$work/bad.out")"
finish

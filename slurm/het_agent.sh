#!/usr/bin/env bash
# The "ssh" Open MPI's launcher calls inside a heterogeneous Slurm job (slurm/eth_train.sbatch,
# --mca plm_rsh_agent): starts COMMAND (Open MPI's daemon) on HOST as a one-task step of the
# component that holds HOST, without Slurm's MPI plugin.
#   het_agent.sh [ssh options] HOST COMMAND...
set -euo pipefail
while [[ $1 == -* ]]; do shift; done   # ssh-style options, if Open MPI adds any
host=$1
shift
for ((g = 0; g < SLURM_HET_SIZE; g++)); do
  nodelist=SLURM_JOB_NODELIST_HET_GROUP_$g
  if scontrol show hostnames "${!nodelist}" | grep -qx "$host"; then
    exec srun --het-group="$g" --nodelist="$host" --nodes=1 --ntasks=1 --overlap --mpi=none bash -c "$*"
  fi
done
echo "slurm/het_agent.sh: host $host is in no component of job $SLURM_JOB_ID" >&2
exit 1

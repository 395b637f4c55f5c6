#!/usr/bin/env bash
# Runs COMMAND with ETH_BF16_KERNELS=0 on the world ranks FP32_COMPUTE_RANKS lists (Open MPI's
# OMPI_COMM_WORLD_RANK; space-separated), unchanged on the others: a job whose ranks take the two
# bf16 paths, bf16 kernels and fp32 compute, as a mixed-generation cluster's would.
#   mpirun -np N fp32_compute_on_ranks.sh COMMAND...   (mpi_test_env.sh's run: ETH_TRAIN_WRAPPER)
set -euo pipefail
for r in ${FP32_COMPUTE_RANKS:-}; do
  if [ "$r" = "${OMPI_COMM_WORLD_RANK:-}" ]; then export ETH_BF16_KERNELS=0; fi
done
exec "$@"

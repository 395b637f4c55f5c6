# Sourced by the benchmarks on CPU ranks of two speeds (bench/run_plan_vs_measured_hetero.sh,
# bench/run_rebalance.sh), from the repository root: 3 ranks, rank 0 alone on core 0
# (cpu-full), ranks 1 and 2 sharing core 1 (cpu-half); the topology, model and shipped profiles
# of that setup; a work directory with a log; `say` (echo and log) and `mpmd BIN ARGS...` (the
# pinned launch: MPMD mpirun, taskset per rank, --bind-to none so that Open MPI's binding does
# not override taskset, mpi_yield_when_idle so that a rank of core 1 waiting in MPI yields the
# core to its neighbour; ../shared/ENVIRONMENT-NOTES.md).
source scripts/env.sh
export OMP_NUM_THREADS=1
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
TOPO=inputs/topologies/workstation-3cpu-2speeds.yaml
MODEL=inputs/models/demo.yaml
T=64
BATCH=16
PROF_FULL=inputs/profiles/cpu-full-demo-T64.yaml
PROF_HALF=inputs/profiles/cpu-half-demo-T64.yaml
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK" bench/results
LOG=$WORK/log.txt
: > "$LOG"
say() { echo "$@" | tee -a "$LOG"; }
MPI=(mpirun --bind-to none --mca mpi_yield_when_idle 1)
mpmd() { "${MPI[@]}" -np 1 taskset -c 0 "$@" : -np 2 taskset -c 1 "$@"; }

#!/usr/bin/env bash
# Planner prediction vs measured eth_train run on this machine's CPU ranks (docs/results.md,
# "Planner prediction vs measured run (CPU ranks)"; docs/planner.md, "Checking the prediction").
#
#   bash bench/run_plan_vs_measured.sh [BUILD_DIR]      # default build/
#
# Setup: 2 ranks on the 2 cores, one OpenMP/OpenBLAS thread each (OMP_NUM_THREADS=1, ranks bound
# to cores), topology inputs/topologies/workstation-2cpu.yaml, model demo (4 layers, C 128,
# vocabulary 50257), T 64, global batch 16. Steps:
#   0. link: MPI all-reduce bus bandwidth of a gradient-sized buffer between the 2 ranks, put in a
#      copy of the topology (the cost model times reductions and transfers with it);
#   1. profile: mpirun -np 2 eth_profile, one thread per rank, both ranks timing each block at
#      once (lockstep), so each is measured while the other core does the same work, as in a
#      2-rank run (the last repetition's profile is kept as inputs/profiles/cpu-core-demo-T64.yaml);
#   2. plan: eth_plan --top 4 writes the planner's choice to inputs/plans/workstation-2cpu-demo.yaml
#      (its predicted.iteration_ms is the prediction); eth_plan --evaluate simulates the hand-written
#      depth-2 plan inputs/plans/workstation-2cpu-demo-depth2.yaml (1 pipeline, 2 stages, 4x4 1F1B)
#      and the one-stage plan inputs/plans/workstation-2cpu-demo-wide.yaml (both ranks in one
#      stage, each micro-batch of 8 split 4:4, 2 micro-batches);
#   3. run: eth_train, STEPS steps (default 10), once per plan; a run's measured iteration is the
#      median step ms without the first WARMUP (default 2) steps;
#   steps 1-3 are repeated RUNS times (default 3) back to back, so that each prediction and the
#   runs compared with it see the same background load; figures are medians over repetitions;
#   4. compare: error % = (predicted - measured) / measured; bench/results/plan_vs_measured.json.
# Environment: STEPS, RUNS, WARMUP, REPS (profile repetitions, default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)
BUILD=${1:-build}
STEPS=${STEPS:-10}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-2}
REPS=${REPS:-5}
source scripts/env.sh
export OMP_NUM_THREADS=1
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3

TOPO=inputs/topologies/workstation-2cpu.yaml
MODEL=inputs/models/demo.yaml
T=64
BATCH=16
PROFILE=inputs/profiles/cpu-core-demo-T64.yaml
BEST=inputs/plans/workstation-2cpu-demo.yaml
HAND_PLANS=(depth2 wide)   # inputs/plans/workstation-2cpu-demo-NAME.yaml
WORK=${WORK:-$(mktemp -d)}   # profiles, plans, logs and metrics of every run stay here
mkdir -p "$WORK"
LOG=$WORK/log.txt
mkdir -p bench/results
: > "$LOG"
say() { echo "$@" | tee -a "$LOG"; }
say "== work dir $WORK; load before: $(cat /proc/loadavg)"

# 0. The link: the cost model times a ring all-reduce as 2(k-1)/k * bytes / bandwidth, so the
# intra-node bandwidth to use is the all-reduce bus bandwidth for a gradient-sized buffer (the
# demo model's 7.25 M floats) between the 2 bound ranks, not a datasheet figure; measured with
# the call the runtime makes (mpi_topology/process_group.cpp: MPI_Iallreduce polled with
# MPI_Test), which Open MPI runs about half as fast as a blocking MPI_Allreduce here.
mpicc -O2 -o "$WORK/allreduce" bench/iallreduce_bandwidth.c
read -r BUS_GBS AR_MS < <(mpirun -np 2 --bind-to core "$WORK/allreduce" 7250000)
say "== 0. MPI_Iallreduce, 2 ranks, 7.25 M floats: median $AR_MS ms = $BUS_GBS GB/s bus bandwidth"
TOPO_RUN=$WORK/workstation-2cpu-measured.yaml
sed "s/link: {kind: shared-memory, bandwidth_gbs: [0-9.]*/link: {kind: shared-memory, bandwidth_gbs: $BUS_GBS/" "$TOPO" > "$TOPO_RUN"

# 1-3, RUNS times: profile, plan and run back to back, so that each prediction and the runs it
# is compared with see the same background load (the machine is shared).
for r in $(seq 1 "$RUNS"); do
  say "== repetition $r: 1. profile (mpirun -np 2 eth_profile, lockstep; load $(cat /proc/loadavg))"
  mpirun -np 2 --bind-to core "$BUILD/app/eth_profile" --model "$MODEL" --seq-len $T --device-type cpu-core \
    --repetitions "$REPS" --out "$WORK/profile-$r.yaml" | tee -a "$LOG"
  say "== repetition $r: 2. plan"
  "$BUILD/app/eth_plan" --topology "$TOPO_RUN" --model "$MODEL" --batch $BATCH --seq-len $T --top 4 \
    --profile "$WORK/profile-$r.yaml" --out "$WORK/best-$r.yaml" | tee -a "$LOG"
  for name in "${HAND_PLANS[@]}"; do
    "$BUILD/app/eth_plan" --evaluate "inputs/plans/workstation-2cpu-demo-$name.yaml" --topology "$TOPO_RUN" \
      --model "$MODEL" --seq-len $T --profile "$WORK/profile-$r.yaml" | tee "$WORK/$name-eval-$r.txt" | tee -a "$LOG"
  done
  say "== repetition $r: 3. run"
  for name in best "${HAND_PLANS[@]}"; do
    plan=inputs/plans/workstation-2cpu-demo-$name.yaml; [ $name = best ] && plan=$WORK/best-$r.yaml
    say "-- $name run $r ($(cat /proc/loadavg))"
    mpirun -np 2 --bind-to core "$BUILD/app/eth_train" --topology "$TOPO_RUN" --plan "$plan" --model "$MODEL" \
      --train-data inputs/data/kjv_train.bin --seq-len $T --steps "$STEPS" --output-dir "$WORK/$name-$r" \
      2>&1 | tee -a "$LOG" | tail -n 2
  done
done
# The shipped profile and plan are the last repetition's.
cp "$WORK/profile-$RUNS.yaml" "$PROFILE"
sed "s#^\# ETH plan:#\# ETH plan (bench/run_plan_vs_measured.sh, link $BUS_GBS GB/s measured):#" "$WORK/best-$RUNS.yaml" > "$BEST"
say "== load after: $(cat /proc/loadavg)"

say "== 4. compare"
# The setup, as recorded beside the results; the comparison itself is bench/compare_plan_runs.py.
SETUP=$("$PY" - "$BUS_GBS" "$AR_MS" "$STEPS" "$RUNS" "$WARMUP" <<'EOF'
import json, sys
bus_gbs, ar_ms, steps, runs, warmup = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print(json.dumps({"machine": "2 cores (AMD Zen3), shared with other jobs", "ranks": 2, "omp_num_threads": 1,
                  "topology": "inputs/topologies/workstation-2cpu.yaml, link = measured MPI all-reduce bus bandwidth",
                  "allreduce_bus_gbs": bus_gbs, "allreduce_7.25M_floats_ms": ar_ms,
                  "model": "inputs/models/demo.yaml", "seq_len": 64, "global_batch": 16, "steps": steps,
                  "repetitions": runs, "warmup_steps_skipped": warmup,
                  "method": "per repetition: profile, plan, run each plan once; medians over repetitions"}))
EOF
)
"$PY" bench/compare_plan_runs.py "$WORK" "$RUNS" "$WARMUP" "$SETUP" bench/results/plan_vs_measured.json \
  "best=planner's choice (eth_plan --top 4, #1)" \
  "depth2=1 pipeline of depth 2, 4x4 (inputs/plans/workstation-2cpu-demo-depth2.yaml, --evaluate)" \
  "wide=1 stage of both ranks, 8 split 4:4, x2 (inputs/plans/workstation-2cpu-demo-wide.yaml, --evaluate)" | tee -a "$LOG"
"$PY" bench/stamp.py bench/results/plan_vs_measured.json "$load_at_start"

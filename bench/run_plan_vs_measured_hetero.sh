#!/usr/bin/env bash
# Planner prediction vs measured eth_train run on CPU ranks of TWO speeds (docs/results.md,
# "Planner prediction vs measured run (CPU ranks of two speeds)"; docs/planner.md, "Checking the
# prediction"). The heterogeneous counterpart of bench/run_plan_vs_measured.sh.
#
#   bash bench/run_plan_vs_measured_hetero.sh [BUILD_DIR]      # default build/
#
# Two real speeds on 2 cores: 3 ranks, rank 0 alone on core 0 (device type cpu-full), ranks 1
# and 2 both pinned to core 1 (cpu-half: each gets half the core while both compute). Each rank
# gets its own pinning from an MPMD mpirun (`-np 1 taskset -c 0 BIN : -np 2 taskset -c 1 BIN`,
# --bind-to none so Open MPI's binding does not override taskset), OMP_NUM_THREADS=1, and
# mpi_yield_when_idle so that a rank of core 1 waiting in MPI yields the core to its neighbour
# instead of spinning on it (../shared/ENVIRONMENT-NOTES.md).
# Topology inputs/topologies/workstation-3cpu-2speeds.yaml; model demo, T 64, global batch 16.
#   0. link: MPI_Iallreduce bus bandwidth of a gradient-sized buffer among the 3 pinned ranks (the
#      call and method of bench/run_plan_vs_measured.sh, but with this run's pinning, since two
#      of the ranks share a core), written into a copy of the topology;
#   1. profile: cpu-half by `mpirun -np 2 taskset -c 1 eth_profile` (2 ranks in lockstep on one
#      core: each timed while its neighbour does the same work, as in a run where both compute)
#      and, AT THE SAME TIME, cpu-full by `mpirun -np 1 taskset -c 0 eth_profile`, so that
#      rank 0's profile is measured with core 1 busy, as it is in training (shared L3 and
#      memory bandwidth). eth_profile averages its ranks' medians over its communicator, so the
#      two types need two separate mpiruns. cpu-full gets 2x the repetitions so that both take
#      about as long and core 1 stays busy for all of cpu-full's timings;
#   2. plan: eth_plan --top 4 (planner's choice) and eth_plan --evaluate of two hand plans:
#      inputs/plans/workstation-3cpu-2speeds-idle.yaml (rank 0 alone, ranks 1-2 idle) and
#      inputs/plans/workstation-3cpu-2speeds-mixed.yaml (one stage of ranks 0,1,2, 8 split 4:2:2);
#   3. run: eth_train STEPS steps per plan; measured = median step ms (metrics "ms", rank 0's
#      wall time of the step) without the first WARMUP steps; the max over pipelines of the
#      per-pipeline "ms" is recorded too;
#   1-3 repeated RUNS times back to back; figures are medians over repetitions;
#   4. compare: error % = (predicted - measured) / measured; bench/results/plan_vs_measured_hetero.json.
# Environment: STEPS (10), RUNS (3), WARMUP (2), REPS (profile repetitions, 5).
set -euo pipefail
cd "$(dirname "$0")/.."
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)
BUILD=${1:-build}
STEPS=${STEPS:-10}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-2}
REPS=${REPS:-5}
source bench/two_speed_cpus.sh   # TOPO MODEL T BATCH PROF_FULL PROF_HALF WORK LOG, say, mpmd
BEST=inputs/plans/workstation-3cpu-2speeds-planner.yaml
HAND_PLANS=(idle mixed)   # inputs/plans/workstation-3cpu-2speeds-NAME.yaml
say "== work dir $WORK; load before: $(cat /proc/loadavg)"

# 0. The link (see bench/run_plan_vs_measured.sh for why the all-reduce bus bandwidth of the
# runtime's own call is the figure the cost model needs).
mpicc -O2 -o "$WORK/allreduce" bench/iallreduce_bandwidth.c
read -r BUS_GBS AR_MS < <(mpmd "$WORK/allreduce" 7250000)
say "== 0. MPI_Iallreduce, 3 pinned ranks (0 | 1,2), 7.25 M floats: median $AR_MS ms = $BUS_GBS GB/s bus bandwidth"
TOPO_RUN=$WORK/workstation-3cpu-2speeds-measured.yaml
sed "s/link: {kind: shared-memory, bandwidth_gbs: [0-9.]*/link: {kind: shared-memory, bandwidth_gbs: $BUS_GBS/" "$TOPO" > "$TOPO_RUN"

for r in $(seq 1 "$RUNS"); do
  say "== repetition $r: 1. profile (cpu-half: 2 ranks on core 1 in lockstep; cpu-full: 1 rank on core 0, concurrently; load $(cat /proc/loadavg))"
  t0=$(date +%s.%N)
  "${MPI[@]}" -np 2 taskset -c 1 "$BUILD/app/eth_profile" --model "$MODEL" --seq-len $T --device-type cpu-half \
    --repetitions "$REPS" --out "$WORK/half-$r.yaml" > "$WORK/half-$r.txt" 2>&1 &
  half_pid=$!
  "${MPI[@]}" -np 1 taskset -c 0 "$BUILD/app/eth_profile" --model "$MODEL" --seq-len $T --device-type cpu-full \
    --repetitions $((2 * REPS)) --out "$WORK/full-$r.yaml" > "$WORK/full-$r.txt" 2>&1
  t1=$(date +%s.%N)
  wait "$half_pid"
  t2=$(date +%s.%N)
  cat "$WORK/full-$r.txt" "$WORK/half-$r.txt" >> "$LOG"
  say "   cpu-full profile took $(echo "$t1 - $t0" | bc) s, cpu-half $(echo "$t2 - $t0" | bc) s"
  say "== repetition $r: 2. plan"
  "$BUILD/app/eth_plan" --topology "$TOPO_RUN" --model "$MODEL" --batch $BATCH --seq-len $T --top 4 \
    --profile "$WORK/full-$r.yaml" "$WORK/half-$r.yaml" --out "$WORK/best-$r.yaml" | tee -a "$LOG"
  for name in "${HAND_PLANS[@]}"; do
    "$BUILD/app/eth_plan" --evaluate "inputs/plans/workstation-3cpu-2speeds-$name.yaml" --topology "$TOPO_RUN" \
      --model "$MODEL" --seq-len $T --profile "$WORK/full-$r.yaml" "$WORK/half-$r.yaml" \
      | tee "$WORK/$name-eval-$r.txt" | tee -a "$LOG"
  done
  say "== repetition $r: 3. run"
  for name in best "${HAND_PLANS[@]}"; do
    plan=inputs/plans/workstation-3cpu-2speeds-$name.yaml; [ $name = best ] && plan=$WORK/best-$r.yaml
    say "-- $name run $r ($(cat /proc/loadavg))"
    mpmd "$BUILD/app/eth_train" --topology "$TOPO_RUN" --plan "$plan" --model "$MODEL" \
      --train-data inputs/data/kjv_train.bin --seq-len $T --steps "$STEPS" --output-dir "$WORK/$name-$r" \
      2>&1 | tee -a "$LOG" | tail -n 2
  done
done
# The shipped profiles and planner plan are the last repetition's.
cp "$WORK/full-$RUNS.yaml" "$PROF_FULL"
cp "$WORK/half-$RUNS.yaml" "$PROF_HALF"
sed "s#^\# ETH plan:#\# ETH plan (bench/run_plan_vs_measured_hetero.sh, link $BUS_GBS GB/s measured):#" "$WORK/best-$RUNS.yaml" > "$BEST"
say "== load after: $(cat /proc/loadavg)"

say "== 4. compare"
# The setup, as recorded beside the results; the comparison itself is bench/compare_plan_runs.py.
SETUP=$("$PY" - "$BUS_GBS" "$AR_MS" "$STEPS" "$RUNS" "$WARMUP" <<'EOF'
import json, sys
bus_gbs, ar_ms, steps, runs, warmup = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print(json.dumps({"machine": "2 cores (AMD Zen3)", "ranks": 3,
                  "pinning": "rank 0 on core 0 (cpu-full); ranks 1,2 on core 1 (cpu-half); MPMD mpirun --bind-to none, taskset, mpi_yield_when_idle 1",
                  "omp_num_threads": 1,
                  "topology": "inputs/topologies/workstation-3cpu-2speeds.yaml, link = measured MPI_Iallreduce bus bandwidth of the 3 pinned ranks",
                  "allreduce_bus_gbs": bus_gbs, "allreduce_7.25M_floats_ms": ar_ms,
                  "profiles": "cpu-half: mpirun -np 2 taskset -c 1 eth_profile (lockstep); cpu-full: mpirun -np 1 taskset -c 0 eth_profile, concurrently",
                  "model": "inputs/models/demo.yaml", "seq_len": 64, "global_batch": 16, "steps": steps,
                  "repetitions": runs, "warmup_steps_skipped": warmup,
                  "measured": "median over steps of metrics 'ms' (rank 0's step wall time); max pipeline ms also recorded",
                  "method": "per repetition: profile, plan, run each plan once; medians over repetitions"}))
EOF
)
"$PY" bench/compare_plan_runs.py "$WORK" "$RUNS" "$WARMUP" "$SETUP" bench/results/plan_vs_measured_hetero.json \
  "best=planner's choice (eth_plan --top 4, #1)" \
  "idle=rank 0 alone, 8x2, ranks 1-2 idle (inputs/plans/workstation-3cpu-2speeds-idle.yaml, --evaluate)" \
  "mixed=1 mixed stage of ranks 0,1,2, 8 split 4:2:2, x2 (inputs/plans/workstation-3cpu-2speeds-mixed.yaml, --evaluate)" | tee -a "$LOG"
"$PY" bench/stamp.py bench/results/plan_vs_measured_hetero.json "$load_at_start"

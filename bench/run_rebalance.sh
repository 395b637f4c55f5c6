#!/usr/bin/env bash
# Online re-balancing on CPU ranks of two speeds (docs/results.md, "Online re-balancing"; the
# design: docs/design.md, "Online re-balancing").
#
#   bash bench/run_rebalance.sh [BUILD_DIR]      # default build/; about 4 minutes
#
# Ranks and pinning as bench/run_plan_vs_measured_hetero.sh (bench/two_speed_cpus.sh): 3 ranks,
# rank 0 alone on core 0 (cpu-full), ranks 1 and 2 sharing core 1 (cpu-half). Model demo, T 64, global batch 16, the shipped profiles
# (inputs/profiles/cpu-{full,half}-demo-T64.yaml: measured on this machine, not re-measured
# here, so the first comparison below says how well they still describe it).
#   plans: eth_plan at micro-batch 2 (--micro-batches 2: a pipeline's samples can then move two
#     at a time) for the profiles as measured ("true": predicts T_true) and for cpu-full 2x
#     slower (forward and backward times doubled: "slow", predicts T_slow, the planner's
#     prediction for the slowed cluster); and eth_plan --evaluate of each plan on the other
#     cluster (what the model expects of the runs that do not re-balance);
#   1. slowdown: the true plan, rank 0 2x slower from step SLOW_AT (--slowdown 0:2:SLOW_AT), with
#      --rebalance-every EVERY and without re-balancing;
#   2. wrong profile: the slow plan (declared profile wrong by 2x for rank 0 from the start) run
#      without any slowdown, with and without re-balancing;
#   each run STEPS steps; the four runs repeated RUNS times, interleaved; figures are medians
#   of per-run medians of the step time (metrics "ms", rank 0's wall time of a step):
#   before the slowdown (steps 3..SLOW_AT-1), after it (steps SLOW_AT+10..STEPS: "within 10
#   steps of the slowdown"), and per step. bench/summarize_rebalance.py writes
#   bench/results/rebalance.json.
# Environment: STEPS (26), RUNS (3), SLOW_AT (10), EVERY (2).
set -euo pipefail
cd "$(dirname "$0")/.."
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)
BUILD=${1:-build}
STEPS=${STEPS:-26}
RUNS=${RUNS:-3}
SLOW_AT=${SLOW_AT:-10}
EVERY=${EVERY:-2}
source bench/two_speed_cpus.sh   # TOPO MODEL T BATCH PROF_FULL PROF_HALF WORK LOG, say, mpmd
say "== work dir $WORK; commit $(git rev-parse --short HEAD); load before: $(cat /proc/loadavg)"

# cpu-full as if 2x slower: the forward and backward times doubled (what --slowdown does to a
# rank), the optimizer as it is.
"$PY" - "$PROF_FULL" "$WORK/cpu-full-2x-slower.yaml" <<'PY'
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
for e in p["entries"]:
    for block in ("embedding", "layer", "head"):
        for k in ("forward_ms", "backward_ms"):
            e[block][k] *= 2
open(sys.argv[2], "w").write("# cpu-full with forward and backward 2x slower (bench/run_rebalance.sh)\n" + yaml.safe_dump(p, sort_keys=False))
PY
plan() {  # plan NAME FULL_PROFILE
  "$BUILD/app/eth_plan" --topology "$TOPO" --model "$MODEL" --batch $BATCH --seq-len $T --micro-batches 2 \
    --profile "$2" "$PROF_HALF" --out "$WORK/$1.yaml" | tee -a "$LOG" | grep -E "^#1|^iteration"
}
say "== plans: true profiles, and cpu-full 2x slower"
plan true "$PROF_FULL"
plan slow "$WORK/cpu-full-2x-slower.yaml"
evaluate() {  # evaluate NAME PLAN FULL_PROFILE: the simulated step of a plan on other profiles
  "$BUILD/app/eth_plan" --evaluate "$2" --topology "$TOPO" --model "$MODEL" --seq-len $T --profile "$3" "$PROF_HALF" \
    > "$WORK/$1.txt"
  say "$1: $(grep '^iteration' "$WORK/$1.txt")"
}
evaluate true-plan-slowed-cluster "$WORK/true.yaml" "$WORK/cpu-full-2x-slower.yaml"
evaluate slow-plan-true-cluster "$WORK/slow.yaml" "$PROF_FULL"

train() {  # train NAME PLAN ARGS...
  say "-- $1 ($(cat /proc/loadavg))"
  mpmd "$BUILD/app/eth_train" --topology "$TOPO" --plan "$2" --model "$MODEL" --train-data inputs/data/kjv_train.bin \
    --seq-len $T --steps "$STEPS" --output-dir "$WORK/$1" "${@:3}" > "$WORK/$1.txt" 2>&1 || { cat "$WORK/$1.txt"; exit 1; }
  grep -E "re-balanced" "$WORK/$1.txt" | tee -a "$LOG" || true
  tail -n 1 "$WORK/$1.txt" | tee -a "$LOG"
}
for r in $(seq 1 "$RUNS"); do
  say "== repetition $r"
  train "slowdown-rebalance-$r" "$WORK/true.yaml" --slowdown "0:2:$SLOW_AT" --rebalance-every "$EVERY"
  train "slowdown-fixed-$r" "$WORK/true.yaml" --slowdown "0:2:$SLOW_AT"
  train "wrong-rebalance-$r" "$WORK/slow.yaml" --rebalance-every "$EVERY"
  train "wrong-fixed-$r" "$WORK/slow.yaml"
done
say "== load after: $(cat /proc/loadavg)"
"$PY" bench/summarize_rebalance.py "$WORK" "$RUNS" "$STEPS" "$SLOW_AT" "$EVERY" bench/results/rebalance.json | tee -a "$LOG"
"$PY" bench/stamp.py bench/results/rebalance.json "$load_at_start"

# Sourced by the benchmarks that compare arms of one job (bench/run_recompute.sh,
# bench/run_sharding.sh): each arm is a plan $tmp/plan-ARM.yaml; the planner evaluates it, and
# eth_train runs it ROUNDS times in rotating arm order (so a drift of the machine's speed reaches
# every arm alike), 2 ranks, one per core, one thread each. The caller sets MODEL_YAML and BATCH
# (the plans' global batch) after sourcing, writes the plans, then calls evaluate_arms and run_arms;
# bench/mode_runs.py reads what they leave in $tmp.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)
source scripts/env.sh  # Open MPI as root, as every other benchmark

ROUNDS=${ROUNDS:-3}
T=${T:-1024}
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT_DIR=${OUT_DIR:-bench/results}
TOPOLOGY=inputs/topologies/workstation-2cpu.yaml

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
cmake --build "$BUILD" -j2 --target eth_train eth_plan >/dev/null
mkdir -p "$OUT_DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# evaluate_arms ARM...: the planner's prediction of each arm's plan, $tmp/evaluate-ARM.txt.
evaluate_arms() {
  local arm
  for arm in "$@"; do
    "$BUILD/app/eth_plan" --evaluate "$tmp/plan-$arm.yaml" --topology "$TOPOLOGY" --model "$MODEL_YAML" \
      --batch "$BATCH" --seq-len "$T" --out "$tmp/unused.yaml" > "$tmp/evaluate-$arm.txt"
  done
}

# run_arms ARM...: ROUNDS rounds of every arm, STEPS steps each, into $tmp/ARM-ROUND/; the load
# average before each run goes to stderr and to $tmp/load-ARM-ROUND, since the figures count as
# the machine's own only while it stays low.
run_arms() {
  local arms=("$@") r k arm
  for ((r = 0; r < ROUNDS; r++)); do
    for ((k = 0; k < ${#arms[@]}; k++)); do
      arm=${arms[$(((k + r) % ${#arms[@]}))]}
      cut -d' ' -f1-3 /proc/loadavg > "$tmp/load-$arm-$r"
      echo "round $((r + 1)): $arm (load $(cat "$tmp/load-$arm-$r"))" >&2
      mpirun -np 2 --bind-to core "$BUILD/app/eth_train" --topology "$TOPOLOGY" --plan "$tmp/plan-$arm.yaml" \
        --model "$MODEL_YAML" --train-data inputs/data/kjv_train.bin --seq-len "$T" --steps "$STEPS" \
        --output-dir "$tmp/$arm-$r" > "$tmp/$arm-$r.log" 2>&1 || { cat "$tmp/$arm-$r.log" >&2; exit 1; }
    done
  done
  cut -d' ' -f1-3 /proc/loadavg > "$tmp/load-end"
}

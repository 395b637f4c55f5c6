#!/usr/bin/env bash
# Activation recomputation per stage (none / selective / full): what it saves and what it costs.
# GPT-2 124M shapes (C = 768, 12 heads, vocabulary 50257) with 4 layers so that a step takes
# seconds on this machine, T = 1024, a 2-rank pipeline (layers [0, 3) | [3, 4) + head, one rank
# per core), micro-batch 1, 2 micro-batches (stage 0 holds 2 in flight, stage 1 one). Each mode
# on both stages, ROUNDS rounds in rotating order; per rank: the CPU allocator's high-water mark
# (metrics.jsonl, peak_bytes) beside the runtime's memory model (planned_bytes,
# PipelineRuntime::device_bytes) and the planner's (eth_plan --evaluate, GB); the step time and
# each rank's compute time of the last step, beside the planner's simulated iteration. Writes bench/results/recompute.json; docs/results.md
# quotes it.
#
#   bench/run_recompute.sh                # about 5 minutes on 2 cores
#   ROUNDS=5 STEPS=3 bench/run_recompute.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh  # Open MPI as root, as every other benchmark

ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-2}            # the last step is measured (the first warms the caches)
T=${T:-1024}
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT_DIR=${OUT_DIR:-bench/results}
TOPOLOGY=inputs/topologies/workstation-2cpu.yaml
MODES=(none selective full)

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
cmake --build "$BUILD" -j2 --target eth_train eth_plan >/dev/null
mkdir -p "$OUT_DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/^num_layers: 12/num_layers: 4/; s/^name: gpt2-124m/name: gpt2-124m-4l/' inputs/models/gpt2-124m.yaml > "$tmp/model.yaml"
for mode in "${MODES[@]}"; do
  cat > "$tmp/plan-$mode.yaml" <<PLAN
global_batch: 2
pipelines:
  - micro_batch: 1
    micro_batches: 2
    stages:
      - {ranks: [0], layers: [0, 3], recompute: $mode}
      - {ranks: [1], layers: [3, 4], recompute: $mode}
PLAN
  "$BUILD/app/eth_plan" --evaluate "$tmp/plan-$mode.yaml" --topology "$TOPOLOGY" --model "$tmp/model.yaml" \
    --batch 2 --seq-len "$T" --out "$tmp/unused.yaml" > "$tmp/evaluate-$mode.txt"
done

for ((r = 0; r < ROUNDS; r++)); do
  for ((k = 0; k < ${#MODES[@]}; k++)); do
    mode=${MODES[$(((k + r) % ${#MODES[@]}))]}
    echo "round $((r + 1)): $mode (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    mpirun -np 2 --bind-to core "$BUILD/app/eth_train" --topology "$TOPOLOGY" --plan "$tmp/plan-$mode.yaml" \
      --model "$tmp/model.yaml" --train-data inputs/data/kjv_train.bin --seq-len "$T" --steps "$STEPS" \
      --output-dir "$tmp/$mode-$r" > "$tmp/$mode-$r.log" 2>&1 || { cat "$tmp/$mode-$r.log" >&2; exit 1; }
  done
done

"$PYTHON" - "$tmp" "$ROUNDS" "$OUT_DIR/recompute.json" "ROUNDS=$ROUNDS STEPS=$STEPS bench/run_recompute.sh" "${MODES[@]}" <<'PY'
import json, re, statistics, sys
tmp, rounds, out, cmd, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
def last_step(mode, r):
    records = [json.loads(l) for l in open(f"{tmp}/{mode}-{r}/metrics.jsonl")]
    return [x for x in records if "ms" in x][-1]
def evaluate(mode):
    return open(f"{tmp}/evaluate-{mode}.txt").read()
def planner_gb(mode):  # eth_plan --evaluate's table: "memory GB / device GB" per stage's fullest rank
    return [float(m.group(1)) for m in re.finditer(r"\s([0-9.]+)/[0-9.]+\s*$", evaluate(mode), re.M)]
def planner_ms(mode):  # its simulated iteration (roofline profile: none is measured for this model)
    return float(re.search(r"iteration: simulated ([0-9.]+) ms", evaluate(mode)).group(1))
result = {"benchmark": "recompute", "command": cmd,
          "config": {"model": "gpt2-124m shapes, 4 layers", "seq_len": 1024, "plan": "2 ranks: [0, 3) | [3, 4) + head",
                     "micro_batch": 1, "micro_batches": 2, "threads_per_rank": 1, "rounds": rounds},
          "modes": {}}
for mode in modes:
    steps = [last_step(mode, r) for r in range(rounds)]
    ranks = len(steps[0]["ranks"])
    result["modes"][mode] = {
        "step_ms": {"median": statistics.median(s["ms"] for s in steps), "values": [s["ms"] for s in steps]},
        "planner_simulated_ms": planner_ms(mode),
        "loss": [s["loss"] for s in steps],
        "ranks": [{"peak_bytes": statistics.median(s["ranks"][k]["peak_bytes"] for s in steps),
                   "planned_bytes": steps[0]["ranks"][k]["planned_bytes"],
                   "planner_gb": planner_gb(mode)[k],
                   "compute_ms": {"median": statistics.median(s["ranks"][k]["compute_ms"] for s in steps),
                                  "values": [s["ranks"][k]["compute_ms"] for s in steps]}}
                  for k in range(ranks)]}
json.dump(result, open(out, "w"), indent=2)
base = result["modes"]["none"]
print(f"{'mode':10} {'rank':>4} {'peak MB':>9} {'device_bytes MB':>15} {'planner MB':>10} {'saved MB':>9} "
      f"{'compute ms':>10} {'added %':>8} {'step ms':>9} {'planner ms':>10}")
for mode in modes:
    m = result["modes"][mode]
    for k, rk in enumerate(m["ranks"]):
        b = base["ranks"][k]
        print(f"{mode:10} {k:>4} {rk['peak_bytes'] / 1e6:9.1f} {rk['planned_bytes'] / 1e6:15.1f} {rk['planner_gb'] * 1e3:10.0f} "
              f"{(b['peak_bytes'] - rk['peak_bytes']) / 1e6:9.1f} {rk['compute_ms']['median']:10.0f} "
              f"{100 * (rk['compute_ms']['median'] / b['compute_ms']['median'] - 1):8.1f} {m['step_ms']['median']:9.0f} "
              f"{m['planner_simulated_ms']:10.0f}")
PY

#!/usr/bin/env bash
# Activation recomputation per stage (none / selective / full): what it saves and what it costs.
# GPT-2 124M shapes (C = 768, 12 heads, vocabulary 50257) with 4 layers so that a step takes
# seconds on this machine, T = 1024, a 2-rank pipeline (layers [0, 3) | [3, 4) + head, one rank
# per core), micro-batch 1, 2 micro-batches (stage 0 holds 2 in flight, stage 1 one). Each mode
# on both stages, ROUNDS rounds in rotating order; per rank: the CPU allocator's high-water mark
# (metrics.jsonl, peak_bytes) beside the runtime's memory model (planned_bytes,
# rank_memory, lib/plan/memory_model.hpp) and the planner's (eth_plan --evaluate, GB); the step time and
# each rank's compute time of the last step, beside the planner's simulated iteration. Writes bench/results/recompute.json; docs/results.md
# quotes it.
#
#   bench/run_recompute.sh                # about 5 minutes on 2 cores
#   ROUNDS=5 STEPS=3 bench/run_recompute.sh
STEPS=${STEPS:-2}            # the last step is measured (the first warms the caches)
MODES=(none selective full)
set -euo pipefail
source "$(dirname "$0")/lib_mode_runs.sh"
BATCH=2
MODEL_YAML=$tmp/model.yaml
sed 's/^num_layers: 12/num_layers: 4/; s/^name: gpt2-124m/name: gpt2-124m-4l/' inputs/models/gpt2-124m.yaml > "$MODEL_YAML"
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
done
evaluate_arms "${MODES[@]}"
run_arms "${MODES[@]}"

"$PYTHON" - "$tmp" "$ROUNDS" "$OUT_DIR/recompute.json" "ROUNDS=$ROUNDS STEPS=$STEPS bench/run_recompute.sh" "${MODES[@]}" <<'PY'
import json, statistics, sys
sys.path.insert(0, "bench")
import mode_runs
tmp, rounds, out, cmd, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
def last_step(mode, r):
    return mode_runs.steps(tmp, mode, r)[-1]
def planner_gb(mode):  # eth_plan --evaluate's table: "memory GB / device GB" per stage's fullest rank
    return mode_runs.planner_gb(mode_runs.evaluate(tmp, mode))
def planner_ms(mode):  # its simulated iteration (roofline profile: none is measured for this model)
    return mode_runs.planner_ms(mode_runs.evaluate(tmp, mode))
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
mode_runs.print_table(
    [("      mode", ""), ("rank", ""), ("  peak MB", ".1f"), ("device_bytes MB", ".1f"), ("planner MB", ".0f"),
     (" saved MB", ".1f"), ("compute ms", ".0f"), (" added %", ".1f"), ("  step ms", ".0f"), ("planner ms", ".0f")],
    [(mode, k, rk["peak_bytes"] / 1e6, rk["planned_bytes"] / 1e6, rk["planner_gb"] * 1e3,
      (base["ranks"][k]["peak_bytes"] - rk["peak_bytes"]) / 1e6, rk["compute_ms"]["median"],
      100 * (rk["compute_ms"]["median"] / base["ranks"][k]["compute_ms"]["median"] - 1),
      result["modes"][mode]["step_ms"]["median"], result["modes"][mode]["planner_simulated_ms"])
     for mode in modes for k, rk in enumerate(result["modes"][mode]["ranks"])])
PY
"$PYTHON" bench/stamp.py "$OUT_DIR/recompute.json" "$load_at_start"

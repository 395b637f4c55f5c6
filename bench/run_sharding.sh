#!/usr/bin/env bash
# Optimizer-state sharding (ZeRO-1) on data-parallel ranks: what it saves and what it costs.
# GPT-2 124M shapes (C = 768, 12 heads, vocabulary 50257) cut to LAYERS = 6 layers by default (all
# 12 took 15.7-22.6 s a step under other users' load, about 11 s alone: LAYERS=12), T = 1024,
# 2 ranks on workstation-2cpu.yaml (one rank per core, 1 thread each), each a one-stage pipeline
# of the whole model, micro-batch 1, one micro-batch: one gradient block of 2 owners (the layers,
# final layernorm and wpe) plus the tied word embedding, which stays whole. Arms: plain; the block
# sharded (`sharded_blocks: [0]`); sharded with `recompute: full` on the stage. ROUNDS rounds in
# rotating order, STEPS steps each; the step time is the median over the steps after the first
# (which warms the caches). Per rank: the CPU allocator's high-water mark (metrics.jsonl,
# peak_bytes) beside the runtime's memory model (planned_bytes, rank_memory in lib/plan/memory_model.hpp) and
# the planner's (eth_plan --evaluate, its per-rank table by kind), the optimizer phase (AdamW and,
# sharded, the all-gather) and the gradient reduction. Writes bench/results/sharding.json;
# docs/results.md quotes it.
#
#   bench/run_sharding.sh                 # about 4 minutes on 2 idle cores
#   ROUNDS=5 STEPS=4 LAYERS=4 bench/run_sharding.sh
STEPS=${STEPS:-3}
LAYERS=${LAYERS:-6}
ARMS=(plain sharded sharded-full)
set -euo pipefail
source "$(dirname "$0")/lib_mode_runs.sh"
BATCH=2
MODEL_YAML=$tmp/model.yaml
sed "s/^num_layers: 12/num_layers: $LAYERS/; s/^name: gpt2-124m/name: gpt2-124m-${LAYERS}l/" inputs/models/gpt2-124m.yaml > "$MODEL_YAML"
plan() {  # plan RECOMPUTE SHARDED_LINE
  cat <<PLAN
global_batch: $BATCH
pipelines:
  - {micro_batch: 1, micro_batches: 1, stages: [{ranks: [0], layers: [0, $LAYERS], recompute: $1}]}
  - {micro_batch: 1, micro_batches: 1, stages: [{ranks: [1], layers: [0, $LAYERS], recompute: $1}]}
$2
PLAN
}
plan none "" > "$tmp/plan-plain.yaml"
plan none "sharded_blocks: [0]" > "$tmp/plan-sharded.yaml"
plan full "sharded_blocks: [0]" > "$tmp/plan-sharded-full.yaml"
evaluate_arms "${ARMS[@]}"
run_arms "${ARMS[@]}"

"$PYTHON" - "$tmp" "$ROUNDS" "$LAYERS" "$OUT_DIR/sharding.json" \
  "ROUNDS=$ROUNDS STEPS=$STEPS LAYERS=$LAYERS bench/run_sharding.sh" "${ARMS[@]}" <<'PY'
import json, statistics, sys
sys.path.insert(0, "bench")
import mode_runs
tmp, rounds, layers, out, cmd, arms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:]
med = statistics.median
def measured(arm, r):  # the steps after the first
    return mode_runs.steps(tmp, arm, r)[1:]
def per_run(arm, f):  # each run's median of f over its measured steps, and their median over rounds
    values = [med(f(s) for s in measured(arm, r)) for r in range(rounds)]
    # min: the least disturbed step, since other users' load only ever adds time
    return {"median": med(values), "values": values, "min": min(f(s) for r in range(rounds) for s in measured(arm, r))}
result = {"benchmark": "sharding", "command": cmd,
          "config": {"model": f"gpt2-124m shapes, {layers} layers", "seq_len": 1024,
                     "plan": "2 ranks, 2 one-stage pipelines of the whole model (data parallel)",
                     "micro_batch": 1, "micro_batches": 1, "threads_per_rank": 1, "rounds": rounds,
                     "topology": "inputs/topologies/workstation-2cpu.yaml"},
          "load_average_1_5_15": {"before_each_run": {f"{a}-{r}": mode_runs.load(tmp, f"{a}-{r}")
                                                      for r in range(rounds) for a in arms},
                                  "end": mode_runs.load(tmp, "end")},
          "arms": {}}
for arm in arms:
    text = mode_runs.evaluate(tmp, arm)
    planner = mode_runs.planner_memory(text)
    first = measured(arm, 0)[0]
    ranks = []
    for k in range(len(first["ranks"])):
        peak = med(s["ranks"][k]["peak_bytes"] for r in range(rounds) for s in measured(arm, r))
        planned = first["ranks"][k]["planned_bytes"]
        ranks.append({"peak_bytes": peak, "planned_bytes": planned, "planner_gb": planner[k],
                      "planned_vs_peak_pct": 100 * (planned / peak - 1),
                      "planner_vs_peak_pct": 100 * (planner[k]["total"] * 1e9 / peak - 1),
                      **{f: per_run(arm, lambda s, f=f, k=k: s["ranks"][k][f])
                         for f in ("compute_ms", "reduce_ms", "optimizer_ms")}})
    result["arms"][arm] = {"step_ms": per_run(arm, lambda s: s["ms"]), "planner_simulated_ms": mode_runs.planner_ms(text),
                           "loss": [[s["loss"] for s in mode_runs.steps(tmp, arm, r)] for r in range(rounds)],
                           "ranks": ranks}
json.dump(result, open(out, "w"), indent=2)
base = result["arms"][arms[0]]
def saved(k, rk):
    return base["ranks"][k]["peak_bytes"] - rk["peak_bytes"]
mode_runs.print_table(
    [("          arm", ""), ("rank", ""), (" peak MB", ".1f"), ("planned MB", ".1f"), ("planner MB", ".0f"),
     ("(optim.)", ".0f"), ("saved MB", ".1f"), ("saved %", ".1f"), ("optim ms", ".0f"), ("reduce ms", ".0f"),
     ("step ms", ".0f"), ("added %", ".1f"), ("planner ms", ".0f")],
    [(arm, k, rk["peak_bytes"] / 1e6, rk["planned_bytes"] / 1e6, rk["planner_gb"]["total"] * 1e3,
      rk["planner_gb"]["optimizer"] * 1e3, saved(k, rk) / 1e6, 100 * saved(k, rk) / base["ranks"][k]["peak_bytes"],
      rk["optimizer_ms"]["median"], rk["reduce_ms"]["median"], result["arms"][arm]["step_ms"]["median"],
      100 * (result["arms"][arm]["step_ms"]["median"] / base["step_ms"]["median"] - 1),
      result["arms"][arm]["planner_simulated_ms"])
     for arm in arms for k, rk in enumerate(result["arms"][arm]["ranks"])])
print("load average before each run:", result["load_average_1_5_15"]["before_each_run"], "end:", result["load_average_1_5_15"]["end"])
PY
"$PYTHON" bench/stamp.py "$OUT_DIR/sharding.json" "$load_at_start"

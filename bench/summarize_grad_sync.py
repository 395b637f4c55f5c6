#!/usr/bin/env python3
"""Summarises bench/run_grad_sync.sh's runs into bench/results/grad_sync.json.

Per run: the steps after the first (warm-up), each step's `ms` and, over ranks, the max, mean and
min of `reduce_ms` (the non-overlapped wait in the reduce_grads action: it includes waiting for the
other owners of a block to reach it). Per mode: the median over runs of each run's median step.
Collectives: derived from the plan's gradient blocks exactly as lib/plan/grad_blocks.cpp and
lib/runtime/grad_slices.cpp do, and checked against the count eth_train prints for rank 0."""
import argparse
import json
import os
import re
import statistics

import yaml

from plan_blocks import plan_blocks

ap = argparse.ArgumentParser()
for a in ("--runs", "--plan", "--model", "--out", "--train-bin-note"):
    ap.add_argument(a, required=True)
for a in ("--steps", "--seq-len", "--vocab"):
    ap.add_argument(a, type=int, required=True)
args = ap.parse_args()

plan = yaml.safe_load(open(args.plan))
model = yaml.safe_load(open(args.model))
world = sum(len(s["ranks"]) for p in plan["pipelines"] for s in p["stages"])


# --- blocks and collectives, as lib/plan/grad_blocks.cpp
blocks, tied_group = plan_blocks(plan, model)
tied, tied_params = tied_group["owners"], tied_group["params"]

# Per rank, as GradSync::collectives_per_step: one per block (block mode) or one per unit of the
# block (per-layer mode) that the rank holds, if the group has more than one member; plus wte.
per_rank = {"block": [0] * world, "per-layer": [0] * world}
for blk in blocks:
    if len(blk["owners"]) > 1:
        for r in blk["owners"]:
            per_rank["block"][r] += 1
            per_rank["per-layer"][r] += blk["units"][1] - blk["units"][0]
if len(tied) > 1:
    for r in tied:
        per_rank["block"][r] += 1
        per_rank["per-layer"][r] += 1
# Distinct collective operations per step (each group's collective counted once, not per member).
distinct = {
    "block": sum(len(b["owners"]) > 1 for b in blocks) + (len(tied) > 1),
    "per-layer": sum(b["units"][1] - b["units"][0] for b in blocks if len(b["owners"]) > 1) + (len(tied) > 1),
}


# --- runs
def med(xs):
    return statistics.median(xs)


runs = []
for line in open(args.runs):
    topo, mode, rep, d, wall, cmd = line.rstrip("\n").split("\t")
    log = open(d + ".log").read()
    rank0 = int(re.search(r"\| gradient sync +\| [^,]+, (\d+) collective", log).group(1))
    steps = [json.loads(x) for x in open(os.path.join(d, "metrics.jsonl")) if '"ranks"' in x]
    assert len(steps) == args.steps, (d, len(steps))
    timed = steps[1:]  # the first step is warm-up
    per_step = [{
        "ms": s["ms"],
        "reduce_ms_max": max(r["reduce_ms"] for r in s["ranks"]),
        "reduce_ms_mean": statistics.mean(r["reduce_ms"] for r in s["ranks"]),
        "reduce_ms_min": min(r["reduce_ms"] for r in s["ranks"]),
        "compute_ms_mean": statistics.mean(r["compute_ms"] for r in s["ranks"]),
        "comm_wait_ms_mean": statistics.mean(r["comm_wait_ms"] for r in s["ranks"]),
        "optimizer_ms_mean": statistics.mean(r["optimizer_ms"] for r in s["ranks"]),
    } for s in timed]
    runs.append({"topology": topo, "mode": mode, "repeat": int(rep), "wall_s": float(wall), "command": cmd,
                 "collectives_rank0_printed": rank0, "losses": [s["loss"] for s in steps],
                 "median": {k: med([x[k] for x in per_step]) for k in per_step[0]}, "steps": per_step})

out = {
    "benchmark": "gradient synchronisation, block-wise vs per-layer",
    "setup": {"ranks": world, "model": args.model, "model_config": model, "plan": args.plan, "plan_config": plan,
              "steps_per_run": args.steps, "warmup_steps_discarded": 1, "seq_len": args.seq_len,
              "train_data": args.train_bin_note, "threads_per_rank": 1,
              "command": "bench/run_grad_sync.sh"},
    "blocks": blocks,
    "tied_embedding": {"owners": tied, "params": tied_params},
    "collectives_per_step": {
        "per_rank": per_rank,
        "sum_over_ranks": {m: sum(v) for m, v in per_rank.items()},
        "distinct_operations": distinct,
        "note": "one hierarchical reduction = one collective; on several nodes it runs as a node-local "
                "reduce, a leader all-reduce and a node-local broadcast (MPI calls), identically in both modes",
    },
    "metrics_note": "reduce_ms: time in the reduce_grads action (non-overlapped reduction wait, including "
                    "waiting for the other owners of each group to finish their backward); max/mean/min over "
                    "ranks per step; per run the median over the timed steps; per mode the median over runs",
    "results": {},
    "runs": runs,
}

keys = ["ms", "reduce_ms_max", "reduce_ms_mean", "reduce_ms_min", "compute_ms_mean", "comm_wait_ms_mean",
        "optimizer_ms_mean"]
for topo in dict.fromkeys(r["topology"] for r in runs):
    res = {}
    for mode in ("block", "per-layer"):
        rs = [r for r in runs if r["topology"] == topo and r["mode"] == mode]
        printed = {r["collectives_rank0_printed"] for r in rs}
        assert printed == {per_rank[mode][0]}, (topo, mode, printed, per_rank[mode][0])
        res[mode] = {k: med([r["median"][k] for r in rs]) for k in keys}
        res[mode]["per_run_median_ms"] = [r["median"]["ms"] for r in rs]
        res[mode]["per_run_median_reduce_ms_max"] = [r["median"]["reduce_ms_max"] for r in rs]
        res[mode]["collectives_rank0"] = per_rank[mode][0]
        res[mode]["collectives_sum_over_ranks"] = sum(per_rank[mode])
        res[mode]["collectives_distinct"] = distinct[mode]
    b, p = res["block"], res["per-layer"]
    res["ratio_per_layer_over_block"] = {
        "reduce_ms_max": p["reduce_ms_max"] / b["reduce_ms_max"],
        "reduce_ms_mean": p["reduce_ms_mean"] / b["reduce_ms_mean"],
        "reduce_ms_min": p["reduce_ms_min"] / b["reduce_ms_min"],
        "step_ms": p["ms"] / b["ms"],
        "collectives_sum_over_ranks": p["collectives_sum_over_ranks"] / b["collectives_sum_over_ranks"],
        "collectives_distinct": p["collectives_distinct"] / b["collectives_distinct"],
    }
    # The machine is shared and its load drifts by several times within minutes: each repeat's
    # block run and per-layer run ran back to back, so their ratio is steadier than the medians'.
    pairs = []
    for rep in sorted({r["repeat"] for r in runs if r["topology"] == topo}):
        rb = next(r for r in runs if r["topology"] == topo and r["mode"] == "block" and r["repeat"] == rep)
        rp = next(r for r in runs if r["topology"] == topo and r["mode"] == "per-layer" and r["repeat"] == rep)
        pairs.append({k: rp["median"][k] / rb["median"][k] for k in ("ms", "reduce_ms_max", "reduce_ms_mean", "reduce_ms_min")})
    res["paired_ratio_per_layer_over_block"] = {
        "per_repeat": pairs, "median": {k: med([x[k] for x in pairs]) for k in pairs[0]}}
    # Same sums, grouped differently: the losses must agree step by step.
    ref = next(r for r in runs if r["topology"] == topo and r["mode"] == "block")["losses"]
    res["loss_max_rel_diff_between_modes"] = max(
        abs(l - l0) / abs(l0) for r in runs if r["topology"] == topo for l, l0 in zip(r["losses"], ref))
    res["losses_block_first_run"] = ref
    out["results"][topo] = res

os.makedirs(os.path.dirname(args.out), exist_ok=True)
with open(args.out, "w") as f:
    json.dump(out, f, indent=1)
for topo, res in out["results"].items():
    print(topo)
    for mode in ("block", "per-layer"):
        m = res[mode]
        print(f"  {mode:9s} step {m['ms']:8.1f} ms | reduce max {m['reduce_ms_max']:7.1f} mean {m['reduce_ms_mean']:7.1f} "
              f"min {m['reduce_ms_min']:6.1f} ms | collectives rank0 {m['collectives_rank0']} "
              f"sum {m['collectives_sum_over_ranks']} distinct {m['collectives_distinct']}")
    print("  ratio per-layer/block:", {k: round(v, 3) for k, v in res["ratio_per_layer_over_block"].items()})
    print("  paired ratio (median over repeats):", {k: round(v, 3) for k, v in res["paired_ratio_per_layer_over_block"]["median"].items()})
    print("  per-repeat ms ratios:", [round(x["ms"], 2) for x in res["paired_ratio_per_layer_over_block"]["per_repeat"]])
    print("  max rel loss diff:", res["loss_max_rel_diff_between_modes"])
print("wrote", args.out)

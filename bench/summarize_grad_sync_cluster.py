#!/usr/bin/env python3
"""Summarises bench/run_grad_sync_cluster.sh's runs into bench/results/grad_sync_cluster.json.

Per run: the steps after the first (warm-up): step `ms` and, over ranks, the min, mean and max of
`reduce_ms` (the non-overlapped wait in the reduce_grads action, which includes waiting for the
other owners of a block); and the bytes each node's NIC sent and received over the whole run
(tc counters, so activations, the loss/norm all-reduce and start-up are in them too), per step.
Per rate and mode: medians over runs of each run's median.

The bandwidth bound of a mode's reduction: per node, the bytes its NIC must send (and receive)
for the reductions it takes part in, at best: a group whose owners lie on k > 1 nodes sums S
bytes with 2 (k - 1) / k * S through each of those nodes' NICs (ring among node leaders); the
bound is the busiest node's bytes over the NIC rate. Flat mode sums the whole model over all
nodes; block and per-layer modes sum each block (and the tied embedding) over its owners' nodes."""
import argparse
import json
import os
import statistics

import yaml

from plan_blocks import model_params, plan_blocks

ap = argparse.ArgumentParser()
for a in ("--runs", "--plan", "--model", "--out", "--command"):
    ap.add_argument(a, required=True)
for a in ("--steps", "--seq-len", "--nodes", "--ranks-per-node"):
    ap.add_argument(a, type=int, required=True)
args = ap.parse_args()

plan = yaml.safe_load(open(args.plan))
model = yaml.safe_load(open(args.model))
blocks, tied = plan_blocks(plan, model)


def node_of(rank):
    return rank // args.ranks_per_node


def bound_bytes(mode):
    """Per node: bytes its NIC must send for this mode's reductions (ring among node leaders)."""
    groups = [(list(range(args.nodes * args.ranks_per_node)), model_params(model))] if mode == "flat" else \
        [(b["owners"], b["params"]) for b in blocks] + [(tied["owners"], tied["params"])]
    per_node = [0.0] * args.nodes
    for owners, params in groups:
        nodes = sorted({node_of(r) for r in owners})
        k = len(nodes)
        for n in nodes:
            per_node[n] += 2 * (k - 1) / k * params * 4 if k > 1 else 0.0
    return per_node


def rate_bytes_per_s(rate):
    unit = {"gbit": 1e9, "mbit": 1e6}[rate[-4:]]
    return float(rate[:-4]) * unit / 8


def med(xs):
    return statistics.median(xs)


runs = []
for line in open(args.runs):
    rate, mode, rep, d, before, after = line.rstrip("\n").split("\t")
    steps = [json.loads(x) for x in open(os.path.join(d, "metrics.jsonl")) if '"ranks"' in x]
    assert len(steps) == args.steps, (d, len(steps))
    timed = steps[1:]
    b = [int(x) for x in before.split()]
    a = [int(x) for x in after.split()]
    sent = [(a[2 * n] - b[2 * n]) / args.steps for n in range(args.nodes)]
    received = [(a[2 * n + 1] - b[2 * n + 1]) / args.steps for n in range(args.nodes)]
    per_step = [{
        "ms": s["ms"],
        "reduce_ms_min": min(r["reduce_ms"] for r in s["ranks"]),
        "reduce_ms_mean": statistics.mean(r["reduce_ms"] for r in s["ranks"]),
        "reduce_ms_max": max(r["reduce_ms"] for r in s["ranks"]),
        "compute_ms_mean": statistics.mean(r["compute_ms"] for r in s["ranks"]),
    } for s in timed]
    runs.append({"rate": rate, "mode": mode, "repeat": int(rep), "losses": [s["loss"] for s in steps],
                 "nic_sent_bytes_per_step": sent, "nic_received_bytes_per_step": received,
                 "median": {k: med([x[k] for x in per_step]) for k in per_step[0]}, "steps": per_step})

results = {}
for rate in dict.fromkeys(r["rate"] for r in runs):
    res = {}
    for mode in dict.fromkeys(r["mode"] for r in runs):
        rs = [r for r in runs if r["rate"] == rate and r["mode"] == mode]
        per_node = bound_bytes(mode)
        m = {k: med([r["median"][k] for r in rs]) for k in rs[0]["median"]}
        m["bound_bytes_busiest_node"] = max(per_node)
        m["bound_ms"] = max(per_node) / rate_bytes_per_s(rate) * 1e3
        m["nic_sent_MB_per_step_busiest_node"] = med([max(r["nic_sent_bytes_per_step"]) for r in rs]) / 1e6
        m["per_run_median_ms"] = [r["median"]["ms"] for r in rs]
        m["per_run_median_reduce_ms_min"] = [r["median"]["reduce_ms_min"] for r in rs]
        res[mode] = m
    ref = next(r for r in runs if r["rate"] == rate)["losses"]
    res["loss_max_rel_diff_between_runs"] = max(
        abs(l - l0) / abs(l0) for r in runs if r["rate"] == rate for l, l0 in zip(r["losses"], ref))
    results[rate] = res

out = {
    "benchmark": "gradient synchronisation across an emulated cluster: block-wise vs per-layer vs flat",
    "setup": {"nodes": args.nodes, "ranks_per_node": args.ranks_per_node, "model": args.model, "model_config": model,
              "plan": args.plan, "plan_config": plan, "steps_per_run": args.steps, "warmup_steps_discarded": 1,
              "seq_len": args.seq_len, "threads_per_rank": 1, "command": args.command,
              "libnbc_iallreduce_algorithm": os.environ.get("OMPI_MCA_coll_libnbc_iallreduce_algorithm",
                                                            "1 (ring, set by mpi_topology/mpi_session.cpp)")},
    "blocks": blocks,
    "tied_embedding": tied,
    "model_params": model_params(model),
    "bound_note": __doc__.split("\n\n")[2].replace("\n", " "),
    "results": results,
    "runs": runs,
}
os.makedirs(os.path.dirname(args.out), exist_ok=True)
with open(args.out, "w") as f:
    json.dump(out, f, indent=1)
for rate, res in results.items():
    for mode, m in res.items():
        if mode.startswith("loss"):
            continue
        print(f"{rate:7s} {mode:9s} step {m['ms']:7.1f} ms | reduce min {m['reduce_ms_min']:6.1f} mean "
              f"{m['reduce_ms_mean']:6.1f} max {m['reduce_ms_max']:6.1f} ms | bound {m['bound_ms']:6.1f} ms "
              f"({m['bound_bytes_busiest_node'] / 1e6:.1f} MB) | NIC sent {m['nic_sent_MB_per_step_busiest_node']:.1f} MB/step")
    print(f"{rate:7s} losses: max relative difference between runs {res['loss_max_rel_diff_between_runs']:.2e}")
print("wrote", args.out)

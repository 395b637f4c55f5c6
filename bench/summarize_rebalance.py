"""Summary of bench/run_rebalance.sh: step times of the four kinds of run (slowdown or wrong
profile, with or without re-balancing) against the planner's predictions, medians over
repetitions; prints it and writes OUT_JSON.

  summarize_rebalance.py WORK RUNS STEPS SLOW_AT EVERY OUT_JSON
"""
import json
import re
import statistics
import sys

med = statistics.median


def predicted(work, name):
    return float(re.search(r"iteration_ms:\s*([0-9.eE+-]+)", open(f"{work}/{name}.yaml").read()).group(1))


def simulated(work, name):
    return float(re.search(r"iteration: simulated ([0-9.]+) ms", open(f"{work}/{name}.txt").read()).group(1))


def records(work, run):
    rows = [json.loads(line) for line in open(f"{work}/{run}/metrics.jsonl")]
    steps = {r["step"]: r["ms"] for r in rows if "ms" in r}
    events = [r["rebalance"] for r in rows if "rebalance" in r]
    return steps, events


def window(steps, first, last):
    return med(steps[s] for s in range(first, last + 1))


def samples(split):
    return [p["samples"] for p in split]


def main():
    work, runs, n, slow_at, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    out_path = sys.argv[6]
    t_true, t_slow = predicted(work, "true"), predicted(work, "slow")
    settled = (slow_at + 10, n)  # "within 10 steps of the slowdown"
    out = {"setup": {"machine": "2 cores (AMD Zen3), shared with other jobs", "ranks": 3,
                     "pinning": "rank 0 on core 0 (cpu-full); ranks 1,2 on core 1 (cpu-half)", "model": "demo", "seq_len": 64,
                     "global_batch": 16, "steps": n, "repetitions": runs, "slowdown": f"rank 0 2x from step {slow_at}",
                     "rebalance_every": every, "rebalance_threshold": 0.05,
                     "plans": "eth_plan --micro-batches 2 on the shipped profiles (true) and with cpu-full 2x slower (slow)",
                     "measured": "median over the window of metrics 'ms' (rank 0's step wall time), median over repetitions"},
           "predicted_true_ms": round(t_true, 1), "predicted_slowed_cluster_ms": round(t_slow, 1),
           "predicted_true_plan_on_slowed_cluster_ms": round(simulated(work, "true-plan-slowed-cluster"), 1),
           "predicted_slow_plan_on_true_cluster_ms": round(simulated(work, "slow-plan-true-cluster"), 1), "runs": {}}
    for kind in ("slowdown-rebalance", "slowdown-fixed", "wrong-rebalance", "wrong-fixed"):
        reps = []
        for r in range(1, runs + 1):
            steps, events = records(work, f"{kind}-{r}")
            reps.append({"before_ms": round(window(steps, 3, slow_at - 1), 1),
                         "after_ms": round(window(steps, *settled), 1),
                         "per_step_ms": [round(steps[s], 1) for s in sorted(steps)],
                         "rebalances": [{"after_step": e["after_step"], "samples": samples(e["new"]),
                                         "predicted_gain": round(e["predicted_gain"], 3)} for e in events]})
        per_step = [round(med(x["per_step_ms"][s] for x in reps), 1) for s in range(n)]
        out["runs"][kind] = {"before_ms": med(x["before_ms"] for x in reps), "after_ms": med(x["after_ms"] for x in reps),
                             "median_per_step_ms": per_step, "repetitions": reps}
    R = out["runs"]
    sr, sf, wr, wf = (R[k]["after_ms"] for k in ("slowdown-rebalance", "slowdown-fixed", "wrong-rebalance", "wrong-fixed"))
    out["summary"] = {
        "slowdown: before, vs predicted_true (%)": round(100 * (R["slowdown-fixed"]["before_ms"] - t_true) / t_true, 1),
        "slowdown: re-balanced / fixed, steps %d-%d" % settled: round(sr / sf, 3),
        "slowdown: re-balanced vs planner's prediction for the slowed cluster (%)": round(100 * (sr - t_slow) / t_slow, 1),
        "slowdown: fixed vs planner's prediction for the slowed cluster (%)": round(100 * (sf - t_slow) / t_slow, 1),
        "wrong profile: re-balanced / fixed, steps %d-%d" % settled: round(wr / wf, 3),
        "wrong profile: re-balanced vs predicted_true (%)": round(100 * (wr - t_true) / t_true, 1),
        "wrong profile: fixed vs predicted_true (%)": round(100 * (wf - t_true) / t_true, 1),
    }
    print(f"predicted: true profiles {t_true:.1f} ms; cpu-full 2x slower {t_slow:.1f} ms; true plan on the slowed "
          f"cluster {out['predicted_true_plan_on_slowed_cluster_ms']} ms; slow plan on the true cluster "
          f"{out['predicted_slow_plan_on_true_cluster_ms']} ms")
    for kind, v in R.items():
        print(f"{kind}: steps 3-{slow_at - 1} {v['before_ms']:.1f} ms, steps {settled[0]}-{settled[1]} {v['after_ms']:.1f} ms; "
              f"re-balances {[ (e['after_step'], e['samples']) for e in v['repetitions'][0]['rebalances']]} (rep 1)")
        print(f"  median per step: {v['median_per_step_ms']}")
    for k, v in out["summary"].items():
        print(f"{k}: {v}")
    json.dump(out, open(out_path, "w"), indent=2)
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()

"""Planner prediction vs measured eth_train runs, for bench/run_plan_vs_measured*.sh: per plan and
repetition, the predicted iteration (the planner's choice: `predicted: iteration_ms` in the plan
it wrote, WORK/best-R.yaml; a hand plan: the "iteration: simulated" line of eth_plan --evaluate,
WORK/KIND-eval-R.txt) against the measured one (median step `ms` of WORK/KIND-R/metrics.jsonl
after the warm-up steps: rank 0's step wall time, which includes the reduction and optimizer, as
the prediction does); medians over repetitions. Prints a summary and writes OUT_JSON.

  compare_plan_runs.py WORK RUNS WARMUP SETUP_JSON OUT_JSON KIND=LABEL...
"""
import datetime
import json
import re
import statistics
import sys

med = statistics.median


def predicted(work, kind, r):
    if kind == "best":
        return float(re.search(r"iteration_ms:\s*([0-9.eE+-]+)", open(f"{work}/best-{r}.yaml").read()).group(1))
    return float(re.search(r"iteration: simulated ([0-9.]+) ms", open(f"{work}/{kind}-eval-{r}.txt").read()).group(1))


def shape(work, r):
    """The planner's choice in words: [r<ranks> L<layers> (<split>) | ...] <b>x<m> per pipeline; idle."""
    text = open(f"{work}/best-{r}.yaml").read()
    words = []
    for p in text.split("- micro_batch:")[1:]:
        stages = re.findall(r"ranks: \[([0-9, ]+)\]\s*\n\s*layers: \[([0-9, ]+)\](?:\s*\n\s*split: \[([0-9, ]+)\])?", p)
        st = " | ".join(f"r{s[0].replace(', ', ',')} L{s[1].replace(', ', '-')}" + (f" ({s[2].replace(', ', ':')})" if s[2] else "")
                        for s in stages)
        words.append(f"[{st}] {p.split()[0]}x{re.search(r'micro_batches: ([0-9]+)', p).group(1)}")
    idle = re.search(r"^idle: \[([0-9, ]*)\]", text, re.M)
    return "; ".join(words) + (f"; idle: {idle.group(1)}" if idle else "")


def measured(work, kind, r, warmup):
    steps = [json.loads(line) for line in open(f"{work}/{kind}-{r}/metrics.jsonl")]
    steps = [s for s in steps if "ms" in s and s["step"] > warmup]
    parts = {k: round(max(med(s["ranks"][i][k] for s in steps) for i in range(len(steps[0]["ranks"]))), 1)
             for k in ("compute_ms", "comm_wait_ms", "reduce_ms", "optimizer_ms")}
    pipe_max = med(max(p["ms"] for p in s["pipelines"]) for s in steps)
    return med(s["ms"] for s in steps), pipe_max, parts


def main():
    work, runs, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    setup, out_path = json.loads(sys.argv[4]), sys.argv[5]
    plans = [arg.split("=", 1) for arg in sys.argv[6:]]
    out = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "setup": setup, "plans": []}
    for kind, label in plans:
        reps = []
        for r in range(1, runs + 1):
            ms, pipe_ms, parts = measured(work, kind, r, warmup)
            pred = predicted(work, kind, r)
            rep = {"predicted_ms": round(pred, 1), "measured_ms": round(ms, 1), "measured_max_pipeline_ms": round(pipe_ms, 1),
                   "error_pct": round(100 * (pred - ms) / ms, 1), "measured_slowest_rank_ms": parts}
            if kind == "best":
                rep["plan"] = shape(work, r)
            reps.append(rep)
        p, m = med(x["predicted_ms"] for x in reps), med(x["measured_ms"] for x in reps)
        e = med(x["error_pct"] for x in reps)
        out["plans"].append({"plan": label, "predicted_ms": p, "measured_ms": m,
                             "error_pct_of_medians": round(100 * (p - m) / m, 1), "median_error_pct": e, "repetitions": reps})
        print(f"{label}\n  predicted {p:.1f} ms, measured {m:.1f} ms: error {100 * (p - m) / m:+.1f}% "
              f"(median of per-repetition errors {e:+.1f}%)")
        for i, x in enumerate(reps, 1):
            print(f"  rep {i}: {x.get('plan', '')} predicted {x['predicted_ms']:.1f} measured {x['measured_ms']:.1f} "
                  f"(max pipeline {x['measured_max_pipeline_ms']:.1f}) error {x['error_pct']:+.1f}%  "
                  f"slowest rank {x['measured_slowest_rank_ms']}")
    json.dump(out, open(out_path, "w"), indent=2)
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()

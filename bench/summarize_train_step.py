#!/usr/bin/env python3
"""Combines the rounds of bench/run_train_step.sh into bench/results/train_step.json.

Every figure is the median over all repeats of all runs (each repeat a block of timed steps),
with min and max beside it; the speed-up over torch is also given per round (same minute of
machine time). Prints the table that docs/results.md quotes. Standard library only.
"""
import argparse
import json
import os
import platform
import statistics


def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values),
            "values": values}


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def load_lines(directory):
    path = os.path.join(directory, "load.txt")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.strip() for line in f]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--elapsed-s", type=float, default=None)
    ap.add_argument("--ours-cmd", required=True)
    ap.add_argument("--torch-cmd", required=True)
    ap.add_argument("--script-cmd", required=True)
    args = ap.parse_args()

    rounds = range(1, args.rounds + 1)
    ours = [json.load(open(os.path.join(args.dir, f"ours_{r}.json"))) for r in rounds]
    torch = [json.load(open(os.path.join(args.dir, f"torch_{r}.json"))) for r in rounds]

    def pooled(runs, *path):
        values = []
        for run in runs:
            node = run
            for key in path:
                node = node[key]
            values += node["values"]
        return spread(values)

    ours_tps = pooled(ours, "tokens_per_s")
    torch_tps = pooled(torch, "tokens_per_s")
    per_round = [o["tokens_per_s"]["median"] / t["tokens_per_s"]["median"] for o, t in zip(ours, torch)]
    sgemm = [{"name": s["name"], "M": s["M"], "N": s["N"], "K": s["K"],
              "gflops": spread([v for run in ours for v in run["sgemm"][i]["gflops"]["values"]])}
             for i, s in enumerate(ours[0]["sgemm"])]
    ratio = pooled(ours, "ratio_step_over_sgemm")

    result = {
        "benchmark": "train_step (single rank, CPU)",
        "machine": {"cpu_model": cpu_model(), "cores": os.cpu_count(), "kernel": platform.release(),
                    "note": "shared 2-core VM: other users' processes run at the same time (see machine_load_per_run); hence interleaved rounds and medians"},
        "threads": {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                    "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
                    "ours": ours[0]["threads"], "torch": torch[0]["threads"]["torch_num_threads"]},
        "blas": {"ours": ours[0]["threads"]["openblas_config"], "torch_mapped_libraries": torch[0]["blas_libraries"]},
        "commands": {"script": args.script_cmd, "ours": args.ours_cmd, "torch": args.torch_cmd},
        "elapsed_s": args.elapsed_s,
        "machine_load_per_run": load_lines(args.dir),
        "config": ours[0]["config"],
        "torch_version": torch[0]["implementation"],
        "flop_formula": ours[0]["flop_formula"],
        "flops_per_step": ours[0]["flops_per_step"],
        "rounds": args.rounds,
        "timing_per_run": ours[0]["timing"],
        "ours": {
            "tokens_per_s": ours_tps,
            "step_ms": pooled(ours, "step_ms"),
            "model_gflops": pooled(ours, "model_gflops"),
            "sgemm_head": sgemm,
            "sgemm_reference": ours[0]["sgemm_reference"],
            "ratio_step_over_sgemm": ratio,
            "ratio_step_over_sgemm_all_head_orientations": pooled(ours, "ratio_step_over_sgemm_all_head_orientations"),
            "profile": ours[0]["profile"],
            "losses_run1": ours[0]["losses"],
        },
        "torch": {
            "tokens_per_s": torch_tps,
            "step_ms": pooled(torch, "step_ms"),
            "model_gflops": spread([v * ours[0]["flops_per_step"] / ours[0]["config"]["tokens_per_step"] / 1e9
                                    for v in torch_tps["values"]]),
            "head_matmul_gflops_linear": pooled(torch, "head_matmul_gflops", "linear"),
            "head_matmul_gflops_mm_out": pooled(torch, "head_matmul_gflops", "mm_out"),
            "losses_run1": torch[0]["losses"],
        },
        "speedup_over_torch": {"median_tokens_per_s_ratio": ours_tps["median"] / torch_tps["median"],
                               "per_round": spread(per_round)},
        "target": {"ratio_step_over_sgemm_min": 0.6, "met": ratio["median"] >= 0.6},
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")

    def row(name, s, fmt="{:.1f}"):
        return f"| {name} | {fmt.format(s['median'])} | {fmt.format(s['min'])} – {fmt.format(s['max'])} | {s['n']} |"

    o, t = result["ours"], result["torch"]
    print(f"wrote {args.out} ({args.rounds} rounds, {args.elapsed_s} s)")
    print("| figure | median | min – max | samples |")
    print("|---|---|---|---|")
    print(row("ETH tokens/s", o["tokens_per_s"], "{:.0f}"))
    print(row("PyTorch tokens/s", t["tokens_per_s"], "{:.0f}"))
    print(row("ETH / PyTorch (per round)", result["speedup_over_torch"]["per_round"], "{:.2f}"))
    print(row("ETH ms/step", o["step_ms"], "{:.0f}"))
    print(row("PyTorch ms/step", t["step_ms"], "{:.0f}"))
    print(row("ETH model GFLOP/s", o["model_gflops"]))
    print(row("PyTorch model GFLOP/s", t["model_gflops"]))
    for s in o["sgemm_head"]:
        print(row(f"sgemm {s['name'].split(':')[0]} ({s['M']}x{s['N']}x{s['K']}) GFLOP/s", s["gflops"]))
    print(row("ratio ETH step / sgemm head_forward", o["ratio_step_over_sgemm"], "{:.2f}"))
    print(row("ratio vs all three head GEMMs", o["ratio_step_over_sgemm_all_head_orientations"], "{:.2f}"))
    print(row("PyTorch F.linear head GFLOP/s", t["head_matmul_gflops_linear"]))
    print(row("PyTorch mm(out=) head GFLOP/s", t["head_matmul_gflops_mm_out"]))
    print(f"median speed-up over torch (tokens/s medians): {result['speedup_over_torch']['median_tokens_per_s_ratio']:.2f}")


if __name__ == "__main__":
    main()

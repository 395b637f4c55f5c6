#!/usr/bin/env python3
"""Combines bench/gpu/run.sh's results into one JSON file and prints the closing table.

  summarize_gpu_step.py --checks CHECKS_LOG --out OUT_JSON RESULTS.jsonl...

Each results file holds JSON lines from bench_gpu_step (impl "eth") and torch_gpu_step.py (impl
"torch", or "torch-compile" with --compile). MFU uses the GPU's dense peak for the precision, from ETH's rows (kernels/gpu_peaks.hpp),
for both implementations. Standard library only.
"""
import argparse
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checks", required=True, help="gpu_checks' output")
    ap.add_argument("--out", required=True)
    ap.add_argument("results", nargs="+")
    args = ap.parse_args()

    rows = []
    for path in args.results:
        try:
            with open(path) as f:
                rows += [json.loads(line) for line in f if line.startswith("{")]
        except OSError:
            pass
    peaks = {}
    for r in rows:
        if r["impl"] == "eth":
            peaks = {"fp32": r.get("peak_tflops_fp32", 0), "tf32": r.get("peak_tflops_tf32", 0),
                     "bf16": r.get("peak_tflops_bf16", 0), "fp16": r.get("peak_tflops_fp16", 0)}
    for r in rows:
        peak = peaks.get(r["precision"], 0)
        r["mfu"] = r["tflops"] / peak if peak else None

    checks_line, failed = "gpu_checks: no output", []
    try:
        with open(args.checks) as f:
            lines = f.read().splitlines()
        checks_line = next((l for l in reversed(lines) if l.startswith("gpu_checks:")), checks_line)
        failed = [l.split()[1] for l in lines if l.startswith("FAIL ")]
    except OSError:
        pass

    with open(args.out, "w") as f:
        json.dump({"checks": checks_line,
                   "failed_checks": failed, "peak_tflops": peaks, "runs": rows}, f, indent=2)
        f.write("\n")

    print()
    print(checks_line + (" (failed: " + ", ".join(failed) + ")" if failed else ""))
    device = rows[0]["device"] if rows else "?"
    print(f"training step, whole model on one GPU ({device}); MFU against the dense peak "
          f"(fp32 {peaks.get('fp32', '?')}, tf32 {peaks.get('tf32', '?')} TFLOP/s)")
    header = f"{'model':<12} {'prec':<5} {'impl':<13} {'B x T':>9} {'step ms':>9} {'tokens/s':>10} {'TFLOP/s':>8} " \
             f"{'MFU':>6} {'eth/torch':>9} {'eth/compile':>11}"
    print(header)
    print("-" * len(header))
    by_key = {(r["model"], r["precision"], r["impl"]): r for r in rows}
    for (model, precision, impl), r in sorted(by_key.items()):
        def ratio(against):  # ETH's tokens/s over PyTorch's (eager, or torch.compile)
            other = by_key.get((model, precision, against))
            return f"{r['tokens_per_s'] / other['tokens_per_s']:.2f}" if impl == "eth" and other else ""
        mfu = f"{100 * r['mfu']:.1f}%" if r["mfu"] is not None else "?"
        print(f"{model:<12} {precision:<5} {impl:<13} {str(r['B']) + 'x' + str(r['T']):>9} {r['step_ms_median']:>9.1f} "
              f"{r['tokens_per_s']:>10.0f} {r['tflops']:>8.1f} {mfu:>6} {ratio('torch'):>9} {ratio('torch-compile'):>11}")
    if not rows:
        print("(no benchmark results: see the log above)")


if __name__ == "__main__":
    main()

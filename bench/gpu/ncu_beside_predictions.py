#!/usr/bin/env python3
"""Nsight Compute's kernel times beside kernel_profile's predictions (docs/gpu.md, "The time
model"): for each kernel of the predicted step, its predicted µs a launch and a step against the
mean ncu measured a launch, and the ratio; then the kernels only one side has (a name the join
misses shows there, not silently). The library GEMMs are left out: kernel_profile prices them
by shape, ncu names them by cuBLASLt's tile kernels.

  ncu_beside_predictions.py PREDICTED.json NCU.csv [--out FILE.md]

NCU.csv: `ncu --csv --print-units base --metrics gpu__time_duration.sum ...`'s rows, one per
launch (bench/gpu/run.sh makes it over bench_gpu_step's steps).
"""
import argparse
import csv
import json
import re
import sys


def key(name):
    """A kernel's name up to its parameter list, without spaces or the casts some demanglers
    print before template arguments ((int)64, (bool)1), and without the leading 'void '."""
    name = name.split("(T1)")[0]
    name = re.sub(r"\((?:int|bool|unsigned int|long)\)", "", name)
    name = re.sub(r"\s+", "", name)
    return name.removeprefix("void")


def measured(path):
    """Per kernel key: the launches ncu timed and their mean, µs."""
    times = {}
    with open(path) as f:
        rows = csv.DictReader(line for line in f if line.startswith('"') or line.startswith("ID"))
        for r in rows:
            if r.get("Metric Name") != "gpu__time_duration.sum":
                continue
            value = float(r["Metric Value"].replace(",", ""))
            unit = r.get("Metric Unit", "ns")
            us = value / 1e3 if unit in ("ns", "nsecond") else value * 1e3 if unit in ("ms", "msecond") else value
            times.setdefault(key(r["Kernel Name"]), []).append(us)
    return {k: (len(v), sum(v) / len(v)) for k, v in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("predicted")
    parser.add_argument("ncu_csv")
    parser.add_argument("--out")
    args = parser.parse_args()
    profile = json.load(open(args.predicted))
    times = measured(args.ncu_csv)
    lines = [f"{profile['model']}, {profile['precision']}, B {profile['batch']}, T {profile['seq_len']}: "
             f"predicted on {profile['gpu']} at commit {profile.get('commit', '?')}, measured by ncu",
             "",
             "| kernel | launches a step | predicted µs | measured µs (launches timed) | measured / predicted | bound |",
             "|---|---|---|---|---|---|"]
    matched = set()
    for k in profile["kernels"]:
        hit = times.get(key(k["name"]))
        if hit is None:
            lines.append(f"| {k['dialect_name']} | {k['launches']:.0f} | {k['predicted_us']:.1f} | not measured | | "
                         f"{k['bound']} |")
            continue
        matched.add(key(k["name"]))
        n, us = hit
        lines.append(f"| {k['dialect_name']} | {k['launches']:.0f} | {k['predicted_us']:.1f} | {us:.1f} ({n}) | "
                     f"{us / k['predicted_us']:.2f} | {k['bound']} |")
    others = sorted(k for k in times if k not in matched)
    lines += ["", f"measured, not predicted ({len(others)}: library kernels and what the profile leaves out):"]
    lines += [f"- {k} ({times[k][0]} launches, {times[k][1]:.1f} µs)" for k in others]
    text = "\n".join(lines) + "\n"
    if args.out:
        open(args.out, "w").write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()

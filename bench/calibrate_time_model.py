#!/usr/bin/env python3
"""The time model's calibration (docs/gpu.md, "The time model"): kernel_profile's JSON for GPT-2
124M's bf16 step (B 16, T 1024, --gpu H200) against ncu's times on an H200, each kernel's time a
step (its launches times their time: the head's classifier ran once then, in chunks now). Fits the attained
fractions of DRAM and of L2 bandwidth (the resources the calibration kernels are bound by) on the
kernels unchanged since the measured commit, by least squares on log(predicted / measured), and
gives each kernel's leave-one-out error (its prediction with the fractions fitted on the others;
none for a kernel whose bound no other kernel shares: nothing else informs its fraction).

  calibrate_time_model.py PROFILE.json NCU.csv
"""
import csv
import json
import math
import sys

# The kernels whose source is unchanged since e650766 but for names and the E template
# (git diff e650766 -- kernels/gpu_ops), by a piece of ncu's name then and kernel_profile's now.
# The fused residual + layernorm is FusedResidualNormForwardKernel<E, true> since 2026-12-06 (one
# template with RMSNorm's: the same loads, sums and stores at kCentred true, its eps read from the
# kernel's arguments instead of an immediate).
SAME = [("DeltaKernel", "attention_backward_bf16_delta"),
        ("FusedResidualLayerNormForwardKernel", "fused_residual_layernorm_forward_bf16"),
        ("ClassifierRowsBf16Kernel", "classifier_rows_bf16"),
        ("AdamWKernel", "adamw_update_bf16")]
# Rewritten since: their measured times are of other kernels, listed for reference only.
CHANGED = [("ForwardKernel<64>", "attention_forward_bf16<64>"),
           ("BackwardDkdvKernel<64>", "attention_backward_bf16_dkdv<64>"),
           ("BackwardDqKernel<64>", "attention_backward_bf16_dq<64>"),
           ("LayerNormBackwardBf16Kernel", "layernorm_backward_bf16")]
FITTED = {"dram": "dram_fraction", "l2": "l2_fraction"}


def measured(path):
    """µs a step of each kernel ncu timed: its launches times their mean."""
    rows = csv.DictReader(line for line in open(path) if not line.startswith("#"))
    return {r["kernel"]: float(r["avg_us"]) * int(r["launches"]) for r in rows}


def find(times, piece):
    hits = [t for name, t in times.items() if "eth::" in name and piece in name]
    return hits[0] if hits else None


def predict(kernel, constants, fractions):
    """kernel_profile's prediction a step with other fractions: each fitted resource's time
    rescaled, in each of the kernel's grids."""
    total = 0.0
    for variant in kernel["variants"]:
        us = dict(variant["resource_us"])
        for resource, key in FITTED.items():
            us[resource] *= constants[key] / fractions[key]
        total += variant["launches"] * (max(us.values()) * variant["tail"] + constants["launch_us"])
    return total


def fit(kernels, measured_us, constants):
    fractions = {key: constants[key] for key in FITTED.values()}
    grid = [f / 200 for f in range(40, 201)]
    for _ in range(3):  # coordinate descent: the two fractions barely interact
        for key in FITTED.values():
            def loss(f):
                trial = dict(fractions, **{key: f})
                return sum(math.log(predict(k, constants, trial) / m) ** 2 for k, m in zip(kernels, measured_us))
            fractions[key] = min(grid, key=loss)
    return fractions


def main():
    profile = json.load(open(sys.argv[1]))
    times = measured(sys.argv[2])
    constants = profile["constants"]
    by_name = {k["dialect_name"]: k for k in profile["kernels"]}
    pairs = [(by_name[ours], find(times, piece)) for piece, ours in SAME]
    kernels, meas = [k for k, _ in pairs], [m for _, m in pairs]
    fractions = fit(kernels, meas, constants)
    print("fitted on all:", ", ".join(f"{k} {v:.3f}" for k, v in fractions.items()))
    print("| kernel | measured µs a step | predicted µs a step | bound | error | leave-one-out µs | error |")
    print("|---|---|---|---|---|---|---|")
    loo_errors = []
    for i, (k, m) in enumerate(pairs):
        p = predict(k, constants, fractions)
        bound = k["bound"]
        row = f"| {k['dialect_name']} | {m:.1f} | {p:.1f} | {bound} | {100 * (p / m - 1):+.0f}% |"
        if FITTED.get(bound) and not any(o["bound"] == bound for o in kernels[:i] + kernels[i + 1:]):
            print(row + f" n/a: the only {bound}-bound kernel | |")  # none of the others informs its fraction
            continue
        q = predict(k, constants, fit(kernels[:i] + kernels[i + 1:], meas[:i] + meas[i + 1:], constants))
        loo_errors.append(abs(q / m - 1))
        print(row + f" {q:.1f} | {100 * (q / m - 1):+.0f}% |")
    print(f"leave-one-out: mean |error| {100 * sum(loo_errors) / len(loo_errors):.0f}%, "
          f"worst {100 * max(loo_errors):.0f}%")
    print("rewritten since the measurement (not comparable):")
    for piece, ours in CHANGED:
        k = by_name[ours]
        print(f"| {ours} | {find(times, piece):.1f} (then) | {predict(k, constants, fractions):.1f} (now) | "
              f"{k['bound']} |")


if __name__ == "__main__":
    main()

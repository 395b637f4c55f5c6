#!/usr/bin/env python3
"""A measured profile (eth_profile on a GPU) against the roofline estimate the planner would use
for the same device type, model, T and precision path in its place: per block kind and
micro-batch, forward and backward, measured / estimate. The estimate is written by this build's
eth_profile --estimate-topology from the device type of the same name in the catalog.

    bench/profile_vs_roofline.py [MEASURED.yaml [CATALOG_TYPE]]
      default: inputs/profiles/NVIDIA-H200-gpt2-124m-T1024.yaml (measured on an H200 in bf16), H200
Writes bench/results/profile_vs_roofline.json and prints the table docs/planner.md quotes.
"""
import json
import os
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stamp import load_now, stamp  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCKS = ("embedding", "layer", "head")


def estimate(catalog_type, measured, build):
    """The roofline profile of catalog_type at the measured profile's model, T and precision."""
    with tempfile.TemporaryDirectory() as tmp:
        catalog = yaml.safe_load(open(os.path.join(REPO, "inputs/topologies/gpu-catalog.yaml")))
        catalog["device_types"] = [t for t in catalog["device_types"] if t["name"] == catalog_type]
        catalog["nodes"][0]["devices"] = [catalog_type]
        topology = os.path.join(tmp, "one-type.yaml")
        yaml.safe_dump(catalog, open(topology, "w"))
        model = os.path.join(REPO, "inputs/models", measured["model"] + ".yaml")
        sizes = [str(e["micro_batch"]) for e in measured["entries"]]
        subprocess.run([os.path.join(build, "app/eth_profile"), "--estimate-topology", topology, "--model", model,
                        "--seq-len", str(measured["seq_len"]), "--precision", measured.get("precision", "fp32"),
                        "--micro-batches", *sizes, "--out-dir", tmp], check=True, cwd=REPO, capture_output=True)
        (written,) = [f for f in os.listdir(tmp) if f != "one-type.yaml"]
        return yaml.safe_load(open(os.path.join(tmp, written)))


def main():
    load_at_start = load_now()
    measured_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        REPO, "inputs/profiles/NVIDIA-H200-gpt2-124m-T1024.yaml")
    catalog_type = sys.argv[2] if len(sys.argv) > 2 else "H200"
    measured = yaml.safe_load(open(measured_path))
    est = estimate(catalog_type, measured, os.environ.get("BUILD", os.path.join(REPO, "build")))
    rows = []
    for m, e in zip(measured["entries"], est["entries"]):
        assert m["micro_batch"] == e["micro_batch"]
        for block in BLOCKS:
            for part in ("forward_ms", "backward_ms"):
                rows.append({"micro_batch": m["micro_batch"], "block": block, "part": part[:-3],
                             "measured_ms": m[block][part], "estimate_ms": e[block][part],
                             "measured_over_estimate": m[block][part] / e[block][part]})
    # A step's worth: one micro-batch through every block of the model, forward and backward.
    layers = {"gpt2-124m": 12, "gpt2-350m": 24, "gpt2-774m": 36, "gpt2-1558m": 48}[measured["model"]]
    whole = []
    for m, e in zip(measured["entries"], est["entries"]):
        total = lambda p: sum(p[b][k] * (layers if b == "layer" else 1) for b in BLOCKS for k in ("forward_ms", "backward_ms"))
        whole.append({"micro_batch": m["micro_batch"], "measured_ms": total(m), "estimate_ms": total(e),
                      "measured_over_estimate": total(m) / total(e)})
    result = {"measured": os.path.relpath(measured_path, REPO), "catalog_type": catalog_type,
              "model": measured["model"], "seq_len": measured["seq_len"], "precision": measured.get("precision"),
              "estimate_path": f"{est['precision']} in {est.get('arithmetic', est['precision'])} arithmetic",
              "blocks": rows, "model_pass": whole,
              "optimizer_ms_per_mparam": {"measured": measured["optimizer_ms_per_mparam"],
                                          "estimate": est["optimizer_ms_per_mparam"]}}
    result.update(stamp(load_at_start))
    out = os.path.join(REPO, "bench/results/profile_vs_roofline.json")
    json.dump(result, open(out, "w"), indent=1)
    print("| b | block | forward measured / estimate ms | ratio | backward measured / estimate ms | ratio |")
    print("|---|---|---|---|---|---|")
    for i in range(0, len(rows), 2):
        f, b = rows[i], rows[i + 1]
        print(f"| {f['micro_batch']} | {f['block']} | {f['measured_ms']:.3f} / {f['estimate_ms']:.3f} | "
              f"{f['measured_over_estimate']:.2f} | {b['measured_ms']:.3f} / {b['estimate_ms']:.3f} | "
              f"{b['measured_over_estimate']:.2f} |")
    print("\n| b | model forward+backward measured / estimate ms | ratio |\n|---|---|---|")
    for w in whole:
        print(f"| {w['micro_batch']} | {w['measured_ms']:.2f} / {w['estimate_ms']:.2f} | {w['measured_over_estimate']:.2f} |")
    o = result["optimizer_ms_per_mparam"]
    print(f"\noptimizer ms per 10^6 parameters: measured {o['measured']:.4f}, estimate {o['estimate']:.4f}")
    print(f"wrote {os.path.relpath(out, REPO)}")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# bf16 in memory and on the wire (issue 29 item 1): each 4-rank plan trains in fp32 and in bf16
# on the CPU twin, and in bf16 on the bf16 kernels' path (ETH_BACKEND=cuda-emulated), and from
# the step records of each run (metrics.jsonl, `ranks`):
#   - every rank's allocator peak equals the memory model's planned bytes within 1% (the model
#     counts bf16 activations, scratch, logits, transfer buffers and late embedding rows, and each
#     path's working copies: lib/plan/memory_model.hpp);
#   - every rank sent exactly half the bytes to its neighbouring stages in bf16 as in fp32, and
#     some rank sent any (the rows travel as stored: mpi_topology/wire_word.hpp);
#   - the bf16 run's activations take fewer bytes: each rank's peak, less the bf16 copies of its
#     parameters that the bf16 path adds (2 bytes per parameter, counted here from the model and
#     the plan), is below its fp32 one's wherever the rank keeps activations for a neighbour (a
#     part of it is fp32 on every path: parameters, gradients, moments, statistics).
# Plans: a split stage (split-stage-4), and one pipeline whose tied embedding sum starts early,
# so that its members keep and gather embedding rows (one-pipeline-4).
#   bf16_storage.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
tiny_job 3
for plan in split-stage-4 one-pipeline-4; do
  for precision in fp32 bf16; do
    PRECISION=$precision run "$plan-$precision" 4 --topology "$plans/cpu-2nodes-4.yaml" --plan "$plans/$plan.yaml"
  done
  ETH_BACKEND=cuda-emulated PRECISION=bf16 run "$plan-kernels" 4 --topology "$plans/interpreter-2nodes-4.yaml" \
    --plan "$plans/$plan.yaml"
  grep -q "bf16 (bf16 kernels" "$work/$plan-kernels.log" || { echo "FAIL: $plan-kernels ran no bf16 kernels"; exit 1; }
  $py - "$work/$plan-fp32/metrics.jsonl" "$work/$plan-bf16/metrics.jsonl" "$work/$plan-kernels/metrics.jsonl" "$plan" \
    "$model" "$plans/$plan.yaml" <<'PY'
import json, sys, yaml
def ranks(path):
    steps = [r for r in map(json.loads, open(path)) if "ranks" in r]
    if len(steps) < 2:
        sys.exit(f"FAIL: {path} holds {len(steps)} step records, expected at least 2")
    return steps
fp32, bf16, kernels, plan = ranks(sys.argv[1]), ranks(sys.argv[2]), ranks(sys.argv[3]), sys.argv[4]
failures = []
for name, steps in (("fp32", fp32), ("bf16", bf16), ("bf16 on kernels", kernels)):
    for k, rank in enumerate(steps[-1]["ranks"]):
        peak, planned = rank["peak_bytes"], rank["planned_bytes"]
        if planned <= 0 or abs(peak - planned) > 0.01 * planned:
            failures.append(f"{name} rank {k}: allocator peak {peak:.0f} bytes, memory model {planned} (expected within 1%)")
        print(f"{plan} {name} rank {k}: peak {peak:.0f} bytes, planned {planned} ({peak / planned:.4f})")
sent = 0
for step, (a, b, c) in enumerate(zip(fp32, bf16, kernels)):
    for k, (x, y, z) in enumerate(zip(a["ranks"], b["ranks"], c["ranks"])):
        sent += x["stage_bytes_sent"]
        for name, w in (("bf16", y), ("bf16 on kernels", z)):
            if 2 * w["stage_bytes_sent"] != x["stage_bytes_sent"]:
                failures.append(f"step {step + 1} rank {k}: {w['stage_bytes_sent']:.0f} bytes sent in {name}, "
                                f"{x['stage_bytes_sent']:.0f} in fp32 (expected exactly half)")
if sent == 0:
    failures.append("no rank sent anything to another stage: the plan tested no transfer")
# Each rank's parameters: per layer 12 C^2 + 13 C; the embedding wte (Vp, C) and wpe (maxT, C) on a
# first stage; the final layernorm, and the head's copy of wte unless first, on a last one.
model, plan_file = yaml.safe_load(open(sys.argv[5])), yaml.safe_load(open(sys.argv[6]))
C, L = model["channels"], model["num_layers"]
params = {}
for pipe in plan_file["pipelines"]:
    for stage in pipe["stages"]:
        begin, end = stage["layers"]
        n = (end - begin) * (12 * C * C + 13 * C)
        n += (model["padded_vocab_size"] + model["max_seq_len"]) * C if begin == 0 else 0
        n += 2 * C + (0 if begin == 0 else model["padded_vocab_size"] * C) if end == L else 0
        for r in stage["ranks"]:
            params[r] = n
for k, (x, y) in enumerate(zip(fp32[-1]["ranks"], bf16[-1]["ranks"])):
    copies = 2 * params[k]
    if x["stage_bytes_sent"] > 0 and not y["peak_bytes"] - copies < x["peak_bytes"]:
        failures.append(f"rank {k}: bf16 peak {y['peak_bytes']:.0f} bytes less {copies} of parameter copies, "
                        f"not below fp32's {x['peak_bytes']:.0f}")
print(f"{plan}: {sent:.0f} bytes between stages in fp32 over {len(fp32)} steps, half that in bf16")
if failures:
    sys.exit("FAIL:\n  " + "\n  ".join(failures))
PY
done

#!/usr/bin/env bash
# kernel_profile as a program (bench/kernel_profile.cpp), on models small enough for seconds:
#   - tiny-llama-hs64's step (4 layers, profiled at 1 and 2) in bf16, fp16 and fp32: the JSON
#     has every field issue 50 names for each kernel, a row for each Llama part of the path
#     (RMSNorm, rotary, SwiGLU, the flash kernels on grouped-query heads), launches per step
#     as the stage runs them, the flash kernels' mma at least their algorithmic minimum, and
#     the step predicted from kernels and GEMMs;
#   - a step that does not fit the GPU named is predicted anyway, with one line saying by how
#     much (deep-narrow.yaml on a T4);
#   - bad input: a GPU not in the catalog (the line lists the known ones), a precision without
#     kernels, a sequence past the model's, a micro-batch past the host's memory: one error line
#     each, exit 2.
# No check here is on a predicted time's value.
#   kernel_profile_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
profile=$build/bench/kernel_profile
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$src/tests/cli/cli_checks.sh"
model=$src/inputs/models/tiny-llama-hs64.yaml

for precision in bf16 fp16 fp32; do
  OMP_NUM_THREADS=2 timeout 300 "$profile" --model "$model" --precision "$precision" --batch 2 --seq-len 64 \
    --gpu H100 --json "$work/$precision.json" >"$work/$precision.out" 2>&1
  check "$precision: profiles tiny-llama-hs64's step" $? "$(tail -5 "$work/$precision.out")"
  /usr/bin/python3 - "$work/$precision.json" "$precision" >"$work/why" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
precision = sys.argv[2]
fields = ["name", "launches", "predicted_us", "bound", "dram_bytes", "sectors_per_request", "shared_wavefronts",
          "shared_wavefronts_ideal", "mma", "mma_min", "sfu", "fp64", "atomics", "blocks_per_sm", "tail"]
kernels = {k["dialect_name"]: k for k in r["kernels"]}
for k in r["kernels"]:
    missing = [f for f in fields if f not in k]
    assert not missing, f"{k['dialect_name']} lacks {missing}"
    assert k["launches"] > 0 and k["predicted_us"] > 0, k["dialect_name"]
    assert k["sectors_per_request"] >= 1, k["dialect_name"]
# 4 layers: one RMSNorm before the blocks, the rest fused with the residual (3 per layer past
# the first, 2 in the first: its second; and the final norm), rotary and SwiGLU once per layer
# each way, attention forward once per layer.
names = " ".join(kernels)
assert r["layers"] == 4 and r["profiled_layers"] == [1, 2], r["profiled_layers"]
assert any("rotary" in n for n in kernels), names
assert any("swiglu" in n for n in kernels), names
attention = [n for n in kernels if n.startswith("attention_forward")]
assert len(attention) == 1 and kernels[attention[0]]["launches"] == 4, attention
if precision != "fp32":
    assert (precision in attention[0]) or precision == "bf16", attention  # fp16's kernels named for fp16
    for n in kernels:
        if n.startswith("attention_") and "delta" not in n:
            k = kernels[n]
            assert k["mma_min"] > 0 and k["mma"] >= k["mma_min"], (n, k["mma"], k["mma_min"])
gemm = sum(c["launches"] for c in r["library_calls"] if c["k"] > 0)
assert gemm > 0, r["library_calls"]
assert r["predicted_step_ms"] > 0 and r["fits"] is True and r["gpu"] == "H100"
for f in ["commit", "host"]:
    assert f in r, f"no stamp field {f}"
PY
  check "$precision: the JSON's kernels, Llama parts, launches and mma minimum" $? "$(cat "$work/why")"
done

# bench/gpu/ncu_beside_predictions.py joins ncu's rows to the predictions by kernel name whatever
# the demangler's spacing and casts: every predicted kernel is found in an ncu-format CSV whose
# names are printed so, and a library kernel is listed as measured, not predicted.
/usr/bin/python3 - "$work/bf16.json" "$work/ncu.csv" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    f.write('==PROF== Connected to process 1\n"ID","Process ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n')
    for i, k in enumerate(r["kernels"]):
        name = k["name"].replace(", 64>", ", (int)64>").replace(">>", "> >")
        f.write(f'"{i}","1","{name}","gpu__time_duration.sum","ns","{1000 * (i + 1)}"\n')
    f.write('"99","1","nvjet_sm90_tst_256x128_64x4","gpu__time_duration.sum","ns","5000"\n')
PY
/usr/bin/python3 "$src/bench/gpu/ncu_beside_predictions.py" "$work/bf16.json" "$work/ncu.csv" >"$work/join.md" 2>&1
! grep -q "not measured" "$work/join.md" && grep -q "^- nvjet_sm90_tst_256x128_64x4 (1 launches, 5.0 µs)" "$work/join.md"
check "ncu's rows joined to every predicted kernel" $? "$(cat "$work/join.md")"

OMP_NUM_THREADS=2 timeout 300 "$profile" --model "$src/tests/cli/deep-narrow.yaml" --batch 1 --seq-len 64 --gpu T4 \
  --json "$work/deep.json" >"$work/deep.out" 2>&1
check "a step past the GPU's memory is predicted anyway" $? "$(tail -5 "$work/deep.out")"
grep -qE '^does not fit: the step needs [0-9.]+ GB, [0-9.]+ GB more than the T4.s 16 GB' "$work/deep.out"
check "one line says it does not fit, and by how much" $? "$(grep -i memory "$work/deep.out")"
/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["fits"] is False and r["memory_bytes"] > r["gpu_memory_bytes"] else 1)' "$work/deep.json"
check "the JSON says it does not fit" $? "$(head -c 300 "$work/deep.json")"

expect_one_error kernel_profile "a GPU not in the catalog" "--gpu" "A800" "H200" "T4" -- \
  "$profile" --model "$model" --seq-len 64 --gpu A800
[ "$error_status" -eq 2 ]; check "exit 2 for an unknown GPU" $? "exit $error_status"
expect_one_error kernel_profile "a precision without kernels" "--precision" "fp32, bf16 or fp16" "tf32" -- \
  "$profile" --model "$model" --seq-len 64 --precision tf32
# A micro-batch whose profiled stage the host cannot hold (address space capped at 3 GB here).
expect_one_error kernel_profile "a micro-batch past the host's memory" "--batch 200000" "fits this host's memory" -- \
  bash -c 'ulimit -v 3000000 && exec "$@"' _ "$profile" --model "$model" --seq-len 64 --batch 200000
expect_one_error kernel_profile "a sequence past the model's" "--seq-len" "64" "65" -- \
  "$profile" --model "$model" --seq-len 65
finish

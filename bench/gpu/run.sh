#!/bin/bash
# One prepared GPU run, under 8 minutes on one H100/H200: build the standalone GPU project
# (bench/gpu/CMakeLists.txt: no MPI, YAML, HDF5 or GoogleTest needed), run the GPU checks (every
# op and a whole stage step of the CUDA backend against the CPU backend), then the training-step
# benchmark of ETH and of PyTorch for GPT-2 124M and 350M, fp32 (TF32 off) and TF32, and print a
# table last. Writes bench/results/gpu_step.json.
#
#   bench/gpu/run.sh            environment: BUILD (default build-gpu), PYTHON (python3 with
#                               torch), CUDA_ARCH (default: the GPU's own, e.g. 90), STEPS (8)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build-gpu}
python=${PYTHON:-python3}
steps=${STEPS:-8}
logs=$build/logs
start=$SECONDS
elapsed() { echo "[$((SECONDS - start)) s]"; }

if [ -z "${CUDA_ARCH:-}" ]; then
  # "9.0" -> "90"; several GPUs: the first one's.
  CUDA_ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  CUDA_ARCH=${CUDA_ARCH:-80;90}
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

echo "== configure and build ($build, CUDA architectures $CUDA_ARCH) $(elapsed)"
mkdir -p "$logs"
if ! cmake -S "$root/bench/gpu" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" -DCMAKE_CUDA_COMPILER="$nvcc" >"$logs/configure.log" 2>&1 ||
   ! cmake --build "$build" -j "$(nproc)" >"$logs/build.log" 2>&1; then
  tail -40 "$logs/configure.log" "$logs/build.log" 2>/dev/null
  echo "run.sh: error: the build failed (logs in $logs)" >&2
  exit 1
fi

echo "== GPU checks: CUDA backend against the CPU backend $(elapsed)"
timeout 180 "$build/gpu_checks" 2>&1 | tee "$logs/gpu_checks.log"
checks_status=${PIPESTATUS[0]}
if [ "$checks_status" -eq 77 ]; then
  echo "run.sh: no usable GPU here: built only; nothing checked or measured"
  exit 77
fi

echo "== training-step benchmark: ETH and PyTorch, $steps timed steps each $(elapsed)"
results=()
for model in gpt2-124m gpt2-350m; do
  out=$logs/eth_$model.jsonl
  timeout 150 "$build/bench_gpu_step" --model "$model" --steps "$steps" | tee "$out" ||
    echo "run.sh: bench_gpu_step --model $model failed (status $?)"
  results+=("$out")
  out=$logs/torch_$model.jsonl
  timeout 150 "$python" "$root/bench/gpu/torch_gpu_step.py" --model "$model" --steps "$steps" | tee "$out" ||
    echo "run.sh: torch_gpu_step.py --model $model failed (status $?)"
  results+=("$out")
done

echo "== summary $(elapsed)"
mkdir -p "$root/bench/results"
"$python" "$root/bench/gpu/summarize_gpu_step.py" --checks "$logs/gpu_checks.log" \
  --out "$root/bench/results/gpu_step.json" "${results[@]}"
echo "$(elapsed) total; gpu_checks exit status $checks_status (0 passed, 1 failed, 77 no GPU)"
exit "$checks_status"

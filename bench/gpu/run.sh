#!/bin/bash
# One prepared GPU run of the whole ETH (MPI, HDF5, CUDA backend), well under 9 minutes on one
# H100/H200. Build and pack here first, then run it on the GPU machine carrying the bundle:
#
#   bash bench/gpu/make_bundle.sh        # here: build-device/ -> .device-bundle/ (binaries + .debs)
#   bash bench/gpu/run.sh                # there (device tool: carry [".device-bundle"])
#
# Parts, each under its own timeout; the script exits non-zero when any part fails:
#   1. kernel checks: every op and a whole stage step of the CUDA backend against the CPU twin;
#      the kernel interpreter against the hardware: each emulated warp instruction (shuffles,
#      votes, mma.m16n8k16, ldmatrix, cp.async) bit for bit, and the launches of a stage step;
#      the bf16 and fp16 kernels (flash attention, cuBLASLt GEMMs with epilogues, fused layernorms,
#      classifier, AdamW) against the interpreter, output by output (tests/gpu/kernel16_check.cpp)
#   2. the float64 PyTorch oracle on the CUDA backend (3 clipped AdamW steps of tiny), in fp32 and
#      in bf16 on the bf16 kernels; bf16 plans on the kernels against one rank, and a 2-rank
#      pipeline whose second rank computes bf16 in fp32; an fp16 plan on the fp16 kernels, and a
#      pipeline crossing from bf16 to fp16 ranks and back
#   3. equivalence against one rank of a 2-rank (two stages) and a 4-rank (split stage beside a
#      one-rank pipeline) plan, every rank on the one GPU: the MPI path through pinned buffers
#   4. the NCCL path: 2 ranks declared as two one-rank nodes (node-local NCCL, MPI leaders)
#   5. cluster readiness (issue 22): ranks bound as Slurm binds them (CUDA_VISIBLE_DEVICES of one
#      GPU per rank, no ETH_CUDA_DEVICES), the equivalence plans with recomputation, sharded
#      moments, an idle rank and re-balancing on the GPU, and compute-sanitizer's memcheck on the
#      kernel checks where the tool exists
#   6. checkpoint and resume (4 ranks on the GPU), a plan too large for the GPU refused in one
#      line, and eth_profile measuring GPT-2 124M on the GPU
#   7. transformers on ETH's Hugging Face export (eth_convert --export-hf), where the Python
#      imports transformers: GPT2LMHeadModel/GPT2TokenizerFast.from_pretrained load it, and their
#      tokens, logits and greedy continuation are ETH's (bench/gpu/hf_transformers.sh; no GPU used)
#   8. Nsight Compute's time of each kernel of a bf16 step (GPT-2 124M, SmolLM2-135M) beside
#      kernel_profile's prediction of it, where ncu exists (ncu-vs-predicted-MODEL.md)
#   9. tokens/s of one rank of ETH against PyTorch on the same GPU, GPT-2 124M and 350M, T 1024,
#      fp32, TF32, bf16 and fp16 (PyTorch: bf16 and fp16 autocast)
# Not coverable on one GPU: NCCL between two physical GPUs (node-local communicators of several
# ranks, the stage transfers' NCCL send/receive): NCCL refuses two ranks of one communicator on
# one GPU. Their logic runs in CI on NCCL's emulation (ETH_NCCL=emulated, docs/design.md).
# Logs and JSON go to $OUT (set by the device tool) or bench/results/gpu/: run.log (everything)
# gpu_step.json (the benchmark table) and the measured profile.
#
# Environment: GPU_BACKEND (default cuda; cpu-async runs parts 2-4 as a dry run of the plumbing
# on a machine without a GPU), STEPS (timed benchmark steps, default 8), PYTHON (default python3).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)
backend=${GPU_BACKEND:-cuda}
steps=${STEPS:-8}
out=${OUT:-$root/bench/results/gpu}
mkdir -p "$out"
exec > >(tee "$out/run.log") 2>&1
start=$SECONDS
# shellcheck source=bench/gpu/device_env.sh
source "$root/bench/gpu/device_env.sh" || exit 1
export PYTHON=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=()

# part NAME SECONDS COMMAND...: runs it under a timeout; its output goes to the log and stays
# in $tmp/part.log until the next part.
part() {
  local name=$1 limit=$2
  shift 2
  echo "== $name [$((SECONDS - start)) s]"
  timeout "$limit" "$@" >"$tmp/part.log" 2>&1
  local rc=$?
  cat "$tmp/part.log"
  if [ "$rc" -eq 0 ]; then echo "-- $name: ok"; else echo "-- $name: FAILED (exit $rc)"; failed+=("$name"); fi
  return "$rc"
}
# equivalence NAME RANKS TOPOLOGY PLAN [OPTIONS...] [-- VAR=VALUE...]: the plan on RANKS ranks
# sharing GPU 0 against one rank; OPTIONS go to the plan's eth_train, VAR=VALUE to equivalence.sh's
# environment.
equivalence() {
  local name=$1 ranks=$2 topology=$3 plan=$4
  shift 4
  local options=() vars=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do options+=("$1"); shift; done
  [ $# -gt 0 ] && shift && vars=("$@")
  part "$name" 150 env ETH_BACKEND="$backend" ETH_CUDA_DEVICES=0 "${vars[@]}" \
    bash tests/mpi/equivalence.sh "$ETH_BUILD" "$root" "$ranks" "$topology" "$plan" "${options[@]}"
}

nvidia-smi -L 2>/dev/null || echo "(no nvidia-smi)"
if [ "$backend" = cuda ]; then
  part "kernel checks: CUDA backend against the CPU twin" 180 "$ETH_BUILD/tests/gpu/gpu_checks"
  part "the kernel interpreter against the GPU: instructions bit for bit, launch counts" 120 \
    "$ETH_BUILD/tests/gpu/simt_hardware_check"
  part "the bf16 and fp16 kernels on the GPU against the interpreter (flash attention, cuBLASLt, fused)" 150 \
    "$ETH_BUILD/tests/gpu/kernel16_check"
fi
part "float64 PyTorch oracle on the $backend backend" 150 env ETH_BACKEND="$backend" \
  sh tests/oracle/run_oracle.sh "$ETH_BUILD/tests/oracle/oracle_dump" inputs/models/tiny.yaml "$tmp/oracle"
if [ "$backend" = cuda ]; then
  # bf16 on the GPU's bf16 kernels (issue 29): the oracle in bf16, as oracle_torch_bf16_cuda_emulated
  # runs it in CI; plans against one rank on the same kernels (the twin's plan bound, 2e-3), and a
  # pipeline whose second rank takes the fp32-compute path (the kernels-against-twin bound, 2u).
  part "float64 PyTorch oracle in bf16 on the GPU's bf16 kernels" 150 env ETH_BACKEND="$backend" \
    EXPECT_PRECISION_PATH="bf16 kernels" sh tests/oracle/run_oracle.sh "$ETH_BUILD/tests/oracle/oracle_dump" \
    tests/oracle/tiny-long.yaml "$tmp/oracle_bf16" 80 blocked bf16
  bf16_kernels=(PRECISION=bf16 MODEL=inputs/models/tiny-hs64.yaml SEQ_LEN=48 LR=1e-3)
  equivalence "bf16 kernels: 4 ranks, split stage, one GPU" 4 tests/mpi/plans/cpu-2nodes-4.yaml \
    tests/mpi/plans/split-stage-4.yaml -- "${bf16_kernels[@]}" TOLERANCE=2e-3 EXPECT="bf16 (bf16 kernels"
  equivalence "bf16: 2 ranks, the second on the fp32-compute path, one GPU" 2 tests/gpu/plans/gpu-1node-2.yaml \
    tests/gpu/plans/two-stages-2.yaml -- "${bf16_kernels[@]}" TOLERANCE=7.8e-3 \
    ETH_TRAIN_WRAPPER="$root/tests/mpi/fp32_compute_on_ranks.sh" FP32_COMPUTE_RANKS=1 \
    EXPECT="rank 1: bf16 (twin over the fp32 kernels"
  # fp16 on the GPU's fp16 kernels (issue 41): a plan against one rank on the same kernels (the
  # fp16 twin's plan bound, 3e-4), and bf16 and fp16 ranks in one job, a pipeline crossing
  # formats at both its boundaries (auto on cpu-mixed16-crossing-4.yaml: rank 2 fp16, the others
  # bf16) against one bf16 rank (bf16's bound: tests/mpi/CMakeLists.txt).
  equivalence "fp16 kernels: 4 ranks, split stage, one GPU" 4 tests/mpi/plans/cpu-2nodes-4.yaml \
    tests/mpi/plans/split-stage-4.yaml -- PRECISION=fp16 MODEL=inputs/models/tiny-hs64.yaml SEQ_LEN=48 LR=1e-3 \
    TOLERANCE=3e-4 EXPECT="fp16 (fp16 kernels"
  equivalence "bf16 and fp16 ranks: a pipeline crossing formats, one GPU" 4 tests/mpi/plans/cpu-mixed16-crossing-4.yaml \
    tests/mpi/plans/two-depths-4.yaml -- PRECISION=bf16 PLAN_PRECISION=auto LR=1e-3 TOLERANCE=2e-3 \
    EXPECT="loss scale      | dynamic"
fi
equivalence "2 ranks, two stages, one GPU (MPI path)" 2 tests/gpu/plans/gpu-1node-2.yaml tests/gpu/plans/two-stages-2.yaml
equivalence "4 ranks, split stage beside a one-rank pipeline, one GPU (MPI path)" 4 \
  tests/mpi/plans/cpu-2nodes-4.yaml tests/mpi/plans/split-stage-4.yaml
equivalence "2 one-rank nodes, two pipelines (NCCL path)" 2 tests/gpu/plans/gpu-2nodes-2.yaml \
  tests/gpu/plans/two-pipelines-2.yaml
if [ "$backend" = cuda ] && ! grep -q "NCCL inside each node" "$tmp/part.log"; then
  echo "-- the NCCL part did not run on NCCL: FAILED"
  failed+=("NCCL path chosen")
fi
# Cluster readiness. Slurm's --gpus-per-task=1 shows each task one GPU as device 0: here both
# ranks see GPU 0 alone (CUDA_VISIBLE_DEVICES=0, no ETH_CUDA_DEVICES) and must bind it; sharing
# it, they reduce through MPI; the log must name the binding.
part "2 ranks bound as Slurm binds them (one visible GPU each)" 150 env ETH_BACKEND="$backend" CUDA_VISIBLE_DEVICES=0 \
  EXPECT="the one GPU this rank sees" bash tests/mpi/equivalence.sh "$ETH_BUILD" "$root" 2 tests/gpu/plans/gpu-1node-2.yaml \
  tests/gpu/plans/two-stages-2.yaml
equivalence "4 ranks, recomputation, one GPU" 4 tests/mpi/plans/cpu-2nodes-4.yaml tests/mpi/plans/recompute-4.yaml
equivalence "4 ranks, sharded AdamW moments, one GPU" 4 tests/mpi/plans/cpu-2nodes-4.yaml \
  tests/mpi/plans/two-depths-4.yaml --shard-optimizer
equivalence "4 ranks, an idle rank, one GPU" 4 tests/mpi/plans/cpu-2nodes-4.yaml tests/mpi/plans/idle-rank-4.yaml
part "re-balancing on the GPU, 4 ranks" 150 env ETH_BACKEND="$backend" ETH_CUDA_DEVICES=0 \
  bash tests/mpi/rebalance.sh "$ETH_BUILD" "$root"
if [ "$backend" = cuda ] && command -v compute-sanitizer >/dev/null; then
  part "compute-sanitizer memcheck on the kernel checks" 240 compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$ETH_BUILD/tests/gpu/gpu_checks"
elif [ "$backend" = cuda ]; then
  echo "== compute-sanitizer: not on this machine, memcheck skipped"
fi

part "checkpoint and resume through device buffers, 4 ranks on one GPU" 180 env ETH_BACKEND="$backend" \
  ETH_CUDA_DEVICES=0 bash tests/mpi/checkpoint_resume.sh "$ETH_BUILD" "$root"

# A plan whose stage state cannot fit the GPU (GPT-2 1.5B, 64 x 1024 tokens on one rank keeps
# 64 (25 x 1024 x 1024) attention matrices per layer) is refused before it allocates, in one line.
too_big() {
  ! ETH_BACKEND="$backend" mpirun -np 1 "$ETH_BUILD/app/eth_train" --model inputs/models/gpt2-1558m.yaml \
    --train-data inputs/data/kjv_train.bin --batch 64 --micro-batch 64 --seq-len 1024 --steps 1 \
    --output-dir "$tmp/too_big" 2>"$tmp/too_big.err" && cat "$tmp/too_big.err" &&
    [ "$(grep -c 'eth_train: error:' "$tmp/too_big.err")" -eq 1 ] && grep -q "expected at most the" "$tmp/too_big.err"
}
if [ "$backend" = cuda ]; then
  part "a plan too large for the GPU is refused with one line" 120 env backend="$backend" tmp="$tmp" \
    bash -c "$(declare -f too_big); too_big"
  part "eth_profile on the GPU: GPT-2 124M, T 1024" 150 mpirun -np 1 "$ETH_BUILD/app/eth_profile" \
    --model inputs/models/gpt2-124m.yaml --seq-len 1024 --micro-batches 1 2 4 8 --repetitions 3 \
    --device-type "NVIDIA H200" --out "$out/profile-h200-gpt2-124m-T1024.yaml"
fi

if "$PYTHON" -c "import transformers" 2>/dev/null; then
  part "transformers loads ETH's Hugging Face export: tokens, logits and greedy continuation" 240 \
    bash bench/gpu/hf_transformers.sh "$ETH_BUILD" "$root"
else
  echo "== transformers: $PYTHON cannot import it, the Hugging Face part skipped"
fi

# Nsight Compute's time of every kernel of one bf16 step beside kernel_profile's prediction of
# it (bench/results/kernel_profile_h200*.json, made here without a GPU: docs/gpu.md, "The time
# model"), GPT-2 124M and SmolLM2-135M at B 16, T 1024; ncu flushes the caches before each kernel.
if [ "$backend" = cuda ] && command -v ncu >/dev/null; then
  for pair in gpt2-124m:kernel_profile_h200.json smollm2-135m:kernel_profile_h200_smollm2.json; do
    model=${pair%%:*}
    part "ncu: $model's bf16 step, each kernel beside its prediction" 240 ncu --csv --print-units base \
      --metrics gpu__time_duration.sum --log-file "$out/ncu-$model-bf16.csv" \
      "$ETH_BUILD/bench/bench_gpu_step" --model "$model" --precisions bf16 --steps 1 --warmup 0
    "$PYTHON" bench/gpu/ncu_beside_predictions.py "bench/results/${pair#*:}" "$out/ncu-$model-bf16.csv" \
      --out "$out/ncu-vs-predicted-$model.md" || failed+=("ncu beside predictions: $model")
  done
elif [ "$backend" = cuda ]; then
  echo "== ncu: not on this machine, the kernels' times beside their predictions skipped"
fi

if [ "$backend" = cuda ]; then
  results=()
  for model in gpt2-124m gpt2-350m; do
    part "ETH $model, one rank, $steps steps" 150 "$ETH_BUILD/bench/bench_gpu_step" --model "$model" --steps "$steps"
    cp "$tmp/part.log" "$tmp/eth_$model.jsonl"
    part "PyTorch $model, $steps steps" 150 "$PYTHON" bench/gpu/torch_gpu_step.py --model "$model" --steps "$steps"
    cp "$tmp/part.log" "$tmp/torch_$model.jsonl"
    results+=("$tmp/eth_$model.jsonl" "$tmp/torch_$model.jsonl")
  done
  # A Llama-family model (issue 49): SmolLM2-135M at T 1024, bf16, ETH against PyTorch eager and
  # at its best (bf16 autocast, SDPA, torch.compile).
  model=smollm2-135m
  part "ETH $model, one rank, $steps steps, bf16" 150 "$ETH_BUILD/bench/bench_gpu_step" --model "$model" \
    --steps "$steps" --precisions bf16
  cp "$tmp/part.log" "$tmp/eth_$model.jsonl"
  part "PyTorch $model, $steps steps, bf16, eager and torch.compile" 240 bash -c \
    "'$PYTHON' bench/gpu/torch_gpu_step.py --model $model --steps $steps --precisions bf16 &&
     '$PYTHON' bench/gpu/torch_gpu_step.py --model $model --steps $steps --precisions bf16 --compile"
  cp "$tmp/part.log" "$tmp/torch_$model.jsonl"
  results+=("$tmp/eth_$model.jsonl" "$tmp/torch_$model.jsonl")
  "$PYTHON" bench/gpu/summarize_gpu_step.py --checks "$out/run.log" --out "$out/gpu_step.json" "${results[@]}"
  "$PYTHON" bench/stamp.py "$out/gpu_step.json" "$load_at_start"
fi

echo "== $((SECONDS - start)) s in all; ${#failed[@]} part(s) failed${failed[*]:+: ${failed[*]}}"
[ ${#failed[@]} -eq 0 ]

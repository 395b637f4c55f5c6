#!/usr/bin/env bash
# eth_train under mpirun, end to end: a short run on the shipped shards writes a metrics line
# per step and a falling loss; each kind of bad input ends with one error line naming the
# file and field, and a non-zero exit.
# Usage: eth_train_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1
src=$2
source "$src/scripts/env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$src/tests/cli/cli_checks.sh"

train() {
  OMP_NUM_THREADS=1 timeout 120 mpirun -np 1 "$build/app/eth_train" "$@"
}

data="$src/inputs/data"
tiny="$src/inputs/models/tiny.yaml"
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np
work = sys.argv[1]
def shard(name, tokens, magic=20240520, version=1, count=None):
    h = np.zeros(256, dtype=np.int32)
    h[0], h[1], h[2] = magic, version, len(tokens) if count is None else count
    open(f"{work}/{name}", "wb").write(h.tobytes() + np.asarray(tokens, dtype=np.uint16).tobytes())
ok = (np.arange(4000) * 31 % 97).astype(np.uint16)
shard("ok.bin", ok)
shard("magic.bin", ok, magic=7)
shard("short.bin", ok, count=5000)
shard("vocab.bin", np.r_[ok[:100], 200, ok[100:]])
PY
printf 'name: broken\nvocab_size: 97\npadded_vocab_size: 128\nmax_seq_len: 16\nnum_layers: 2\nchannels: 32\n' >"$work/noheads.yaml"

# A real run: tiny model, its own data, 12 steps; the loss must fall.
train --model "$tiny" --train-data "$work/ok.bin" --val-data "$work/ok.bin" --seq-len 16 --batch 8 \
  --micro-batch 4 --steps 12 --lr 1e-2 --warmup 2 --eval-every 6 --output-dir "$work/run" >"$work/out" 2>&1
check "training run exits 0" $? "$(tail -5 "$work/out")"
steps=$(grep -c '"loss"' "$work/run/metrics.jsonl")
[ "$steps" -eq 12 ]; check "a metrics line per step" $? "$steps lines"
vals=$(grep -c '"val_loss"' "$work/run/metrics.jsonl")
[ "$vals" -eq 2 ]; check "validation every 6 steps" $? "$vals lines"
/usr/bin/python3 - "$work/run/metrics.jsonl" <<'PY'
import json, sys
losses = [r["loss"] for r in map(json.loads, open(sys.argv[1])) if "loss" in r]
sys.exit(0 if losses[-1] < losses[0] - 0.5 else 1)
PY
check "the loss falls" $? "$(grep '"loss"' "$work/run/metrics.jsonl" | head -1) ... $(grep '"loss"' "$work/run/metrics.jsonl" | tail -1)"

# --help names every environment variable the programs read (app/environment.hpp, the one place
# that reads them).
train --help >"$work/help" 2>&1
check "--help exits 0" $? "$(tail -3 "$work/help")"
read_vars=$(grep -o 'environment_variable("[A-Z0-9_]*")' "$src/app/environment.hpp" | sed 's/.*("\(.*\)")/\1/')
[ "$(echo "$read_vars" | wc -w)" -ge 8 ]; check "app/environment.hpp reads the environment" $? "$read_vars"
for v in $read_vars; do
  grep -q "^  $v=" "$work/help"; check "--help lists $v" $? "$(grep -A40 '^Environment' "$work/help")"
done

common=(--seq-len 16 --batch 8 --micro-batch 4 --steps 1 --output-dir "$work/bad")
expect_one_error eth_train "missing model field" "$work/noheads.yaml" "num_heads" "expected an integer in [1, " -- train \
  --model "$work/noheads.yaml" --train-data "$work/ok.bin" "${common[@]}"
expect_one_error eth_train "missing model file" "$work/absent.yaml" "file" -- train \
  --model "$work/absent.yaml" --train-data "$work/ok.bin" "${common[@]}"
expect_one_error eth_train "wrong shard magic" "$work/magic.bin" "magic" "expected 20240520" -- train \
  --model "$tiny" --train-data "$work/magic.bin" "${common[@]}"
expect_one_error eth_train "truncated shard" "$work/short.bin" "size" -- train \
  --model "$tiny" --train-data "$work/short.bin" "${common[@]}"
expect_one_error eth_train "token id beyond the vocabulary" "$work/vocab.bin" "token 100" "below vocab_size 97" -- train \
  --model "$tiny" --train-data "$work/vocab.bin" "${common[@]}"
expect_one_error eth_train "sequence longer than the model's" "--seq-len" "max_seq_len = 16" -- train \
  --model "$tiny" --train-data "$work/ok.bin" --seq-len 32 --steps 1 --output-dir "$work/bad"
expect_one_error eth_train "batch not a multiple of the micro-batch" "--batch" "multiple of --micro-batch (4)" -- train \
  --model "$tiny" --train-data "$work/ok.bin" --seq-len 16 --batch 10 --micro-batch 4 --output-dir "$work/bad"
expect_one_error eth_train "unknown option" "command line" "--bogus" -- train --model "$tiny" --train-data "$work/ok.bin" --bogus 1
ok_run=(--model "$tiny" --train-data "$work/ok.bin" --seq-len 16 --steps 1 --output-dir "$work/bad")
expect_one_error eth_train "a negative re-balancing interval" "--rebalance-every" "0 (no re-balancing) or a positive step count" \
  "got -2" -- train "${ok_run[@]}" --rebalance-every -2
expect_one_error eth_train "a re-balancing threshold of 1 or more" "--rebalance-threshold" "[0, 1)" -- train "${ok_run[@]}" \
  --rebalance-threshold 1.5
expect_one_error eth_train "a slowdown below 1" "--slowdown" "RANK:FACTOR:STEP" "got 0:0.5:2" -- train "${ok_run[@]}" \
  --slowdown 0:0.5:2
expect_one_error eth_train "a malformed slowdown" "--slowdown" "got 0:2" -- train "${ok_run[@]}" --slowdown 0:2
expect_one_error eth_train "a slowdown of a rank the job does not have" "--slowdown" "a rank below 1" "got 3" -- \
  train "${ok_run[@]}" --slowdown 3:2:1
expect_one_error eth_train "negative modelled compute" "--modelled-compute-ms" "milliseconds per sample > 0" "got -1" -- \
  train "${ok_run[@]}" --modelled-compute-ms -1
expect_one_error eth_train "a lost micro-batch where the rank runs one" "--inject-fault" \
  "a rank whose pipeline runs two micro-batches or more (rank 0 runs 1" "got 0" -- \
  train "${ok_run[@]}" --inject-fault lose-micro-batch:rank=0:step=1

# eth_topo with 4 ranks writes a topology that eth_train then runs a plan on.
OMP_NUM_THREADS=1 timeout 120 mpirun -np 4 "$build/app/eth_topo" -o "$work/topo.yaml" >"$work/out" 2>&1
check "eth_topo writes a topology" $? "$(cat "$work/out")"
OMP_NUM_THREADS=1 timeout 120 mpirun -np 4 "$build/app/eth_train" --model "$src/inputs/models/tiny-4l.yaml" \
  --topology "$work/topo.yaml" --plan "$src/tests/mpi/plans/split-stage-4.yaml" --train-data "$work/ok.bin" \
  --seq-len 16 --steps 2 --output-dir "$work/topo-run" >"$work/out" 2>&1
check "eth_train runs a plan on eth_topo's topology" $? "$(tail -5 "$work/out")"
expect_one_error eth_train "a plan for more ranks than the job has" "topo.yaml" "nodes" "devices for the 1 ranks of this job" "got 4 devices" -- train \
  --model "$src/inputs/models/tiny-4l.yaml" --topology "$work/topo.yaml" --plan "$src/tests/mpi/plans/split-stage-4.yaml" \
  --train-data "$work/ok.bin" --seq-len 16 --steps 1 --output-dir "$work/bad"
expect_one_error eth_train "a plan that does not fit the model: one line from 4 ranks, exit non-zero" \
  "split-stage-4.yaml: pipelines[0].stages[1].layers" -- \
  env OMP_NUM_THREADS=1 timeout 120 mpirun -np 4 "$build/app/eth_train" --model "$src/inputs/models/tiny.yaml" \
  --topology "$work/topo.yaml" --plan "$src/tests/mpi/plans/split-stage-4.yaml" --train-data "$work/ok.bin" \
  --seq-len 16 --steps 1 --output-dir "$work/bad"

# A plan whose stage state exceeds what the topology says a device holds is refused before
# anything is allocated, naming the rank and its device.
sed -E 's/memory_gb: [0-9.e+-]+/memory_gb: 0.0002/' "$work/topo.yaml" >"$work/small-topo.yaml"
expect_one_error eth_train "a plan larger than a device: one line from 4 ranks" "rank 0:" "GB of stage state on this rank" \
  "expected at most the 0.0002 GB of its device" "small-topo.yaml" -- \
  env OMP_NUM_THREADS=1 timeout 120 mpirun -np 4 "$build/app/eth_train" --model "$src/inputs/models/tiny-4l.yaml" \
  --topology "$work/small-topo.yaml" --plan "$src/tests/mpi/plans/split-stage-4.yaml" --train-data "$work/ok.bin" \
  --seq-len 16 --steps 1 --output-dir "$work/bad"

# A plan's sharded_blocks: an index past the plan's blocks, a block of one owner, and sharding
# under a baseline reduction; each one line from 4 ranks.
partly="$src/tests/mpi/plans/partly-sharded-4.yaml"
sed 's/^sharded_blocks: .*/sharded_blocks: [0, 3]/' "$partly" > "$work/past-blocks.yaml"
{ cat "$src/tests/mpi/plans/one-pipeline-4.yaml"; echo "sharded_blocks: [0, 1]"; } > "$work/one-owner.yaml"
on_four_ranks=(env OMP_NUM_THREADS=1 timeout 120 mpirun -np 4 "$build/app/eth_train" --model "$src/inputs/models/tiny-4l.yaml"
  --topology "$src/tests/mpi/plans/cpu-2nodes-4.yaml" --train-data "$work/ok.bin" --seq-len 16 --steps 1
  --output-dir "$work/bad")
expect_one_error eth_train "a sharded block past the plan's blocks: one line from 4 ranks" \
  "past-blocks.yaml: sharded_blocks[1]: expected a block index below 3" "got 3" -- \
  "${on_four_ranks[@]}" --plan "$work/past-blocks.yaml"
expect_one_error eth_train "a sharded block of one owner: one line from 4 ranks" \
  "one-owner.yaml: sharded_blocks[1]: expected a block of at least two owners" "block 1 (layer 2), held by rank 2 alone" -- \
  "${on_four_ranks[@]}" --plan "$work/one-owner.yaml"
expect_one_error eth_train "sharded blocks under --grad-sync flat: one line from 4 ranks" \
  "partly-sharded-4.yaml: sharded_blocks: expected --grad-sync block" "got --grad-sync flat" -- \
  "${on_four_ranks[@]}" --plan "$partly" --grad-sync flat

# The backend: a bad setting, or a GPU asked for where none is, ends every rank with one line.
on_two_ranks=(env OMP_NUM_THREADS=1 timeout 120 mpirun -np 2 "$build/app/eth_train" --model "$tiny"
  --train-data "$work/ok.bin" --seq-len 16 --steps 1 --output-dir "$work/bad")
expect_one_error eth_train "an unknown backend: one line from 2 ranks" "rank 0 on" "ETH_BACKEND" \
  "expected auto, cuda, cuda-emulated, cpu or cpu-async, got 'gpu'" -- env ETH_BACKEND=gpu "${on_two_ranks[@]}"
# A shape the GPU's kernels do not take, on their interpreter as on a GPU: a head size past the
# attention kernels' 128 ends both ranks at their first forward, each naming itself and the limit.
printf 'name: wide-head\nvocab_size: 97\npadded_vocab_size: 128\nmax_seq_len: 16\nnum_layers: 1\nnum_heads: 1\nchannels: 160\n' \
  >"$work/wide-head.yaml"
env ETH_BACKEND=cuda-emulated OMP_NUM_THREADS=1 timeout 120 mpirun -np 2 "$build/app/eth_train" --model "$work/wide-head.yaml" \
  --train-data "$work/ok.bin" --seq-len 16 --steps 1 --precision fp32 --output-dir "$work/bad" >"$work/out" 2>&1
rc=$?
ranks_named=$(grep -c "rank [01] (step 1, forward): GPU attention: head size 160 is above the 128 its kernels are compiled for" "$work/out")
check "a head size the GPU kernels do not take, cuda-emulated: one line per rank, exit non-zero, no hang" \
  $([ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$ranks_named" -ge 1 ] && echo 0 || echo 1) "exit $rc, $ranks_named rank lines: $(tail -5 "$work/out")"
# --precision: an unknown value; TF32 on a device type without it (the CPU ranks eth_topo finds);
# and TF32 that a topology declares on ranks whose backend, the CPU's, has none: one line from 2 ranks.
expect_one_error eth_train "an unknown precision: one line from 2 ranks" \
  "--precision: value: expected auto, fp32, tf32, bf16 or fp16, got fp8" -- "${on_two_ranks[@]}" --precision fp8
expect_one_error eth_train "TF32 on a device type without it: one line from 2 ranks" "the discovered topology (no --topology): device_types." \
  "--precision tf32: expected a device with TF32 tensor cores (a TF32 peak rate), got none" -- \
  env ETH_BACKEND=cpu "${on_two_ranks[@]}" --precision tf32
sed 's/peak_tflops: {fp32: 0.093}/peak_tflops: {fp32: 0.093, tf32: 0.093}/' "$src/inputs/topologies/workstation-2cpu.yaml" \
  >"$work/tf32-cpus.yaml"
printf 'global_batch: 4\npipelines:\n  - micro_batch: 2\n    micro_batches: 2\n    stages:\n      - {ranks: [0], layers: [0, 1]}\n      - {ranks: [1], layers: [1, 2]}\n' \
  >"$work/two-stages.yaml"
expect_one_error eth_train "TF32 declared for the CPU backend: one line from 2 ranks" "rank 0 on" \
  "--precision tf32: expected a GPU with TF32 tensor cores" "got the CPU backend (cpu)" -- \
  env ETH_BACKEND=cpu "${on_two_ranks[@]}" --precision tf32 --topology "$work/tf32-cpus.yaml" \
  --plan "$work/two-stages.yaml"
# bf16 on two device types, one with bf16 units and one without (interpreter-mixed-2.yaml), on
# the GPU's kernels in the interpreter: the settings table names each type's path and peak, rank
# 0 runs the bf16 kernels and rank 1 computes in fp32, and MFU divides by the sum of the two path
# peaks, 0.186 + 0.093 TFLOP/s (not the fp32 peaks, 0.186 TFLOP/s): mfu = tokens/s x 189696 FLOP
# per token (tiny.yaml at T = 16, tests/unit/test_model_flops.cpp) / 0.279e12, per step.
env ETH_BACKEND=cuda-emulated OMP_NUM_THREADS=1 timeout 120 mpirun -np 2 "$build/app/eth_train" --model "$tiny" \
  --train-data "$work/ok.bin" --seq-len 16 --steps 3 --precision bf16 --output-dir "$work/paths" \
  --topology "$src/tests/mpi/plans/interpreter-mixed-2.yaml" --plan "$work/two-stages.yaml" >"$work/out" 2>&1
check "bf16 on a type with bf16 units beside one without, cuda-emulated: exits 0" $? "$(tail -5 "$work/out")"
for row in "1 x cuda-interpreter (8 GB; bf16 at 0.186 TFLOP/s), 1 x cuda-interpreter-no-bf16 (8 GB; bf16 in fp32 arithmetic at 0.093 TFLOP/s)" \
           "rank 0: bf16 (bf16 kernels" "rank 1: bf16 (twin over the fp32 kernels" "0.279 TFLOP/s, all ranks at their path's peak"; do
  grep -qF -- "$row" "$work/out"; check "the settings table says: $row" $? "$(grep -E 'devices|precision|peak' "$work/out")"
done
/usr/bin/python3 - "$work/paths/metrics.jsonl" <<'PY'
import json, sys
steps = [r for r in map(json.loads, open(sys.argv[1])) if "mfu" in r]
ok = len(steps) == 3 and all(abs(r["mfu"] * 0.279e12 / (r["tokens_per_s"] * 189696) - 1) < 1e-9 for r in steps)
print([(r["tokens_per_s"], r["mfu"]) for r in steps])
sys.exit(0 if ok else 1)
PY
check "MFU against the two paths' peaks, every step" $? "$(head -c 600 "$work/paths/metrics.jsonl")"
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect_one_error eth_train "the CUDA backend asked for without a GPU: one line from 2 ranks" "rank 0 on" \
    "ETH_BACKEND=cuda: expected a" -- env ETH_BACKEND=cuda "${on_two_ranks[@]}"
fi

# CUDA-aware MPI asked for where the MPI is not (Debian's Open MPI), an unknown value, and NCCL
# required where the ranks compute on the CPU: one line from 2 ranks, naming rank, host, device.
if ! ompi_info --parsable --all 2>/dev/null | grep -q 'mpi_built_with_cuda_support:value:true'; then
  expect_one_error eth_train "ETH_MPI_CUDA_AWARE=1 with an MPI that is not: one line from 2 ranks" "rank 0 on" \
    "device cpu: ETH_MPI_CUDA_AWARE=1: expected a CUDA-aware MPI" -- env ETH_MPI_CUDA_AWARE=1 "${on_two_ranks[@]}"
fi
expect_one_error eth_train "an unknown ETH_MPI_CUDA_AWARE: one line from 2 ranks" "rank 0 on" \
  "ETH_MPI_CUDA_AWARE: expected auto, 0 or 1, got 'yes'" -- env ETH_MPI_CUDA_AWARE=yes "${on_two_ranks[@]}"
expect_one_error eth_train "ETH_NCCL=1 where ranks compute on the CPU: one line from 2 ranks" \
  "ETH_NCCL=1: expected every rank of a node on a GPU of its own, but rank 0 on" "computes on the CPU" -- \
  env ETH_NCCL=1 OMP_NUM_THREADS=1 timeout 120 mpirun -np 2 "$build/app/eth_train" --model "$src/inputs/models/demo.yaml" \
  --topology "$src/inputs/topologies/workstation-2cpu.yaml" --plan "$src/inputs/plans/workstation-2cpu-demo-depth2.yaml" \
  --train-data "$work/ok.bin" --seq-len 16 --steps 1 --output-dir "$work/bad"
# NCCL's buffers count against the device: on NCCL's emulation, with a 1 GiB device limit, the
# demo model's 0.11 GiB stage fits alone but not beside its 6 communicators' estimated 1.5 GiB.
expect_one_error eth_train "NCCL's buffers beyond a device's free memory: one line from 2 ranks" \
  "rank 0 on" "with the buffers of 6 NCCL communicators" "expected at most the 1.00 GiB free" -- \
  env ETH_BACKEND=cpu-async ETH_NCCL=emulated ETH_CPU_DEVICE_MEMORY=1073741824 OMP_NUM_THREADS=1 timeout 120 \
  mpirun -np 2 "$build/app/eth_train" --model "$src/inputs/models/demo.yaml" \
  --topology "$src/inputs/topologies/workstation-2cpu.yaml" --plan "$src/inputs/plans/workstation-2cpu-demo-depth2.yaml" \
  --train-data "$work/ok.bin" --seq-len 16 --steps 1 --output-dir "$work/bad"

finish

#!/usr/bin/env bash
# Hugging Face GPT-2 folders (eth_convert --export-hf/--import-hf, lib/io/hf_folder.hpp) against
# float64 PyTorch (hf_oracle.py, whose safetensors reader and writer follow the specification):
#   - a checkpoint eth_train wrote, exported: its model.safetensors, read by the oracle, gives
#     ETH's logits of that checkpoint (oracle_dump --params) within 1e-5;
#   - exported, then imported: a step-0 checkpoint with the same parameters, bit for bit;
#   - folders written from PyTorch tensors in F32 (GPT2LMHeadModel's names, lm_head.weight
#     included), BF16 (GPT2Model's names) and F16, imported: ETH's logits of the import are the
#     oracle's of the folder, within 1e-5;
#   - eth_train --resume fine-tunes an imported checkpoint;
#   - Llama folders, for a tied and an untied head, each with and without Llama 3's rope scaling
#     (tests/oracle/tiny-llama*.yaml, tests/cli/tiny-llama*.yaml): a checkpoint of 3 steps of
#     eth_train on 2 ranks, exported; eth_sample continues a prompt greedily to T = 16 tokens from
#     the checkpoint and from the folder, the same tokens; the folder, read by the oracle from its
#     config.json and safetensors alone and computed by torch_oracle.llama_logits, gives ETH's
#     logits of the checkpoint on that sequence (oracle_dump --params --tokens) within 1e-5, and
#     its argmax takes ETH's greedy tokens.
#   hf_interop.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
tiny_job 2  # $model (tiny-4l), $work/data.bin, $common
oracle() { $py "$src/tests/oracle/hf_oracle.py" "$@"; }
convert() { timeout 60 "$build/app/eth_convert" --model "$model" "$@" > "$work/convert.log" 2>&1 || { cat "$work/convert.log"; false; }; }
# logits CHECKPOINT DIR: ETH's logits of the checkpoint on oracle_dump's prompt, into DIR.
logits() { timeout 60 "$build/tests/oracle/oracle_dump" --params "$1" "$2" "$model" > "$2.log" 2>&1 || { cat "$2.log"; false; }; }

# ETH's side first (eth_train, eth_convert, oracle_dump), then every comparison in one Python.
timeout 120 mpirun -np 1 "$build/app/eth_train" "${common[@]}" --batch 4 --micro-batch 4 --checkpoint-every 2 \
  --output-dir "$work/train" > "$work/train.log" 2>&1 || { cat "$work/train.log"; exit 1; }
trained=$work/train/checkpoints/step_2.h5
convert --export-hf "$trained" --out "$work/hf" && logits "$trained" "$work/trained" \
  && convert --import-hf "$work/hf" --out "$work/back.h5"
check "a trained checkpoint exported, its logits dumped, the export imported" $? "$(ls "$work/hf" 2>&1)"

variants=(F32:lmhead BF16:model F16:lmhead)  # DTYPE:NAMING, in $work/torch_DTYPE
oracle write "$model" 5 $(for v in "${variants[@]}"; do echo "$work/torch_${v%%:*}:$v"; done)
check "folders written from PyTorch: ${variants[*]}" $? ""
imports=()
for v in "${variants[@]}"; do
  dir=$work/torch_${v%%:*}
  convert --import-hf "$dir" --out "$dir.h5" && logits "$dir.h5" "$dir.logits"
  check "the $v folder imported, its logits dumped" $? ""
  imports+=(--import "$dir" "$dir.logits")
done

# Llama folders. The prompt "A!B?C" is 5 tokens of GPT-2's BPE, each below the tiny vocabularies' 97.
T=16 prompt="A!B?C" llamas=()
sample() { OMP_NUM_THREADS=1 timeout 60 "$build/app/eth_sample" --temperature 0 --print-tokens --prompt "$prompt" \
  --max-new-tokens $((T - 5)) "$@"; }
for yaml in tests/oracle/tiny-llama.yaml tests/oracle/tiny-llama-tied.yaml tests/cli/tiny-llama.yaml tests/cli/tiny-llama-tied.yaml; do
  m=$src/$yaml name=$(basename "$(dirname "$yaml")")-$(basename "$yaml" .yaml)
  w=$work/$name
  launch_mpi 120 2 "$build/app/eth_train" --model "$m" --train-data "$work/data.bin" --seq-len 16 --steps 3 --lr 1e-2 \
    --warmup 1 --seed 42 --batch 4 --micro-batch 2 --checkpoint-every 3 --output-dir "$w/train" > "$w.train.log" 2>&1 \
    || { cat "$w.train.log"; false; }
  check "$name: 3 steps of eth_train on 2 ranks" $? ""
  ckpt=$w/train/checkpoints/step_3.h5
  timeout 60 "$build/app/eth_convert" --model "$m" --export-hf "$ckpt" --out "$w/hf" > "$w.convert.log" 2>&1 \
    && sample --model "$m" --checkpoint "$ckpt" > "$w.text" 2> "$w.tokens" \
    && sample --model "$m" --hf "$w/hf" > "$w.hf.text" 2> "$w.hf.tokens" \
    && cmp -s "$w.tokens" "$w.hf.tokens" && cmp -s "$w.text" "$w.hf.text" && grep -q "^tokens: " "$w.tokens"
  check "$name: exported; eth_sample's greedy tokens from the checkpoint and from the folder are the same" $? \
    "$(cat "$w.convert.log" "$w.tokens" "$w.hf.tokens")"
  $py - "$(sed -n 's/^tokens: //p' "$w.tokens")" "$T" "$w.i32" <<'PY'
import sys, numpy as np
row = [int(x) for x in sys.argv[1].replace("|", " ").split()]
assert len(row) == int(sys.argv[2]), f"{len(row)} tokens, T = {sys.argv[2]}"
rows = np.random.default_rng(0).integers(0, 97, (3, len(row)))  # oracle_dump's B = 4 rows
np.concatenate([np.array(row)[None], rows]).astype("<i4").tofile(sys.argv[3])
PY
  timeout 60 "$build/tests/oracle/oracle_dump" --params "$ckpt" --tokens "$w.i32" "$w.dump" "$m" "$T" "" fp32 \
    > "$w.dump.log" 2>&1 || { cat "$w.dump.log"; false; }
  check "$name: ETH's logits of the checkpoint on prompt and continuation" $? ""
  llamas+=(--llama "$w/hf" "$w.dump" 5)
done

oracle check "$model" --export "$work/hf" "$work/trained" --same "$trained" "$work/back.h5" "${imports[@]}" "${llamas[@]}"
check "float64 PyTorch: the export's logits and ETH's; import(export) bit-identical; the imports' logits; the Llama folders' logits and greedy tokens" $? ""

timeout 120 mpirun -np 1 "$build/app/eth_train" "${common[@]}" --batch 4 --micro-batch 4 --resume "$work/torch_BF16.h5" \
  --output-dir "$work/tune" > "$work/tune.log" 2>&1 && grep -qE "resume +\| $work/torch_BF16.h5 " "$work/tune.log" \
  && [ "$(grep -c '"step"' "$work/tune/metrics.jsonl")" -ge 2 ]
check "eth_train --resume fine-tunes an imported model" $? "$(tail -3 "$work/tune.log")"
finish

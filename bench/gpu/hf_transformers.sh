#!/usr/bin/env bash
# bench/gpu/run.sh's part "transformers loads ETH's Hugging Face export" (no GPU needed; a Python
# with transformers, which the GPU machine's has), for GPT-2 and then a Llama (below): demo.yaml
# (GPT-2's vocabulary, 4 layers) trained 30 steps on the KJV shard, exported with eth_convert
# --export-hf; then
# bench/gpu/hf_transformers.py checks that GPT2TokenizerFast.from_pretrained tokenizes a prompt as
# eth_tokenize does, and that GPT2LMHeadModel.from_pretrained's logits (float64) and greedy
# continuation are ETH's (logits of the CPU backend in fp32, from oracle_dump --params --tokens).
#   hf_transformers.sh BUILD_DIR SOURCE_DIR        environment: PYTHON (default python3)
set -euo pipefail
build=$1 src=$2
py=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=$src/inputs/models/demo.yaml
tokenizer=$src/inputs/tokenizer  # named: the binaries' built-in path is the build machine's
T=64
text="In the beginning God created the heaven and the earth. And the earth was"

mpirun -np 1 "$build/app/eth_train" --model "$model" --train-data "$src/inputs/data/kjv_train.bin" --batch 8 \
  --micro-batch 8 --seq-len "$T" --steps 30 --lr 3e-3 --warmup 5 --precision fp32 --checkpoint-every 30 \
  --output-dir "$work/train" | tail -2
checkpoint=$work/train/checkpoints/step_30.h5
mpirun -np 1 "$build/app/eth_convert" --model "$model" --export-hf "$checkpoint" --tokenizer "$tokenizer" --out "$work/hf"
ls -l "$work/hf"
printf '%s' "$text" > "$work/prompt.txt"
"$build/app/eth_tokenize" --tokenizer "$tokenizer" --output "$work/prompt.bin" "$work/prompt.txt"
"$py" "$src/bench/gpu/hf_transformers.py" prompt "$work/hf" "$text" "$work/prompt.bin" "$T" "$work/tokens.i32"
ETH_BACKEND=cpu "$build/tests/oracle/oracle_dump" --params "$checkpoint" --tokens "$work/tokens.i32" "$work/dump" \
  "$model" "$T" "" fp32 | head -2
"$py" "$src/bench/gpu/hf_transformers.py" compare "$work/hf" "$work/dump" "$work/tokens.i32.json"

# The same for a Llama (demo-llama.yaml: GPT-2's vocabulary, so the KJV shard trains it; grouped-
# query attention, an untied head): LlamaForCausalLM.from_pretrained on its export, the prompt's
# ids eth_tokenize's (the export writes no tokenizer for it).
model=$src/inputs/models/demo-llama.yaml
mpirun -np 1 "$build/app/eth_train" --model "$model" --train-data "$src/inputs/data/kjv_train.bin" --batch 8 \
  --micro-batch 8 --seq-len "$T" --steps 30 --lr 3e-3 --warmup 5 --precision fp32 --checkpoint-every 30 \
  --output-dir "$work/train-llama" | tail -2
checkpoint=$work/train-llama/checkpoints/step_30.h5
mpirun -np 1 "$build/app/eth_convert" --model "$model" --export-hf "$checkpoint" --out "$work/hf-llama"
"$py" "$src/bench/gpu/hf_transformers.py" prompt "$work/hf-llama" "$text" "$work/prompt.bin" "$T" "$work/tokens-llama.i32"
ETH_BACKEND=cpu "$build/tests/oracle/oracle_dump" --params "$checkpoint" --tokens "$work/tokens-llama.i32" \
  "$work/dump-llama" "$model" "$T" "" fp32 | head -2
"$py" "$src/bench/gpu/hf_transformers.py" compare "$work/hf-llama" "$work/dump-llama" "$work/tokens-llama.i32.json"

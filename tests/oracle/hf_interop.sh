#!/usr/bin/env bash
# Hugging Face GPT-2 folders (eth_convert --export-hf/--import-hf, lib/io/hf_folder.hpp) against
# float64 PyTorch (hf_oracle.py, whose safetensors reader and writer follow the specification):
#   - a checkpoint eth_train wrote, exported: its model.safetensors, read by the oracle, gives
#     ETH's logits of that checkpoint (oracle_dump --params) within 1e-5;
#   - exported, then imported: a step-0 checkpoint with the same parameters, bit for bit;
#   - folders written from PyTorch tensors in F32 (GPT2LMHeadModel's names, lm_head.weight
#     included), BF16 (GPT2Model's names) and F16, imported: ETH's logits of the import are the
#     oracle's of the folder, within 1e-5;
#   - eth_train --resume fine-tunes an imported checkpoint.
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

oracle check "$model" --export "$work/hf" "$work/trained" --same "$trained" "$work/back.h5" "${imports[@]}"
check "float64 PyTorch: the export's logits and ETH's; import(export) bit-identical; the imports' logits" $? ""

timeout 120 mpirun -np 1 "$build/app/eth_train" "${common[@]}" --batch 4 --micro-batch 4 --resume "$work/torch_BF16.h5" \
  --output-dir "$work/tune" > "$work/tune.log" 2>&1 && grep -qE "resume +\| $work/torch_BF16.h5 " "$work/tune.log" \
  && [ "$(grep -c '"step"' "$work/tune/metrics.jsonl")" -ge 2 ]
check "eth_train --resume fine-tunes an imported model" $? "$(tail -3 "$work/tune.log")"
finish

#!/usr/bin/env bash
# Llama Hugging Face folders out and in (eth_convert --export-hf/--import-hf, lib/io/hf_llama.hpp,
# lib/io/hf_weights.hpp), for tests/cli/tiny-llama.yaml (grouped-query attention, biases, untied
# head) and tiny-llama-tied.yaml (tied head, Llama 3 rope scaling, head size != C / NH), each
# from a checkpoint of init_parameters' values (init_checkpoint):
#   - exported in F32, BF16 and in F32 shards: hf_llama_check.py, reading the safetensors itself,
#     finds transformers' names and shapes holding the rows of ETH's stacked tensors (F32 bit for
#     bit, BF16 each value rounded to nearest even), config.json's keys and the shards' index;
#   - each export imported: every tensor of the checkpoint equal to the original's (F32 bit for
#     bit, BF16 rounded), so config.json also read back into the model's every field;
#   - the F32 export rewritten with F16 tensors imports each value as its float16;
#   - the export's config.json as --model imports it as well;
#   - damaged folders (a shard missing, a tensor missing, a tensor of another shape, a
#     config.json of another model or rope scaling), and a Llama to llm.c's GPT-2 file: one error line naming the file and what differs, exit 1,
#     no checkpoint written.
#   eth_convert_hf_llama.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
checker() { $py "$src/tests/cli/hf_llama_check.py" "$@"; }
# One rank, started as a singleton (no mpirun), as docs/usage.md runs it.
convert() { timeout 60 "$build/app/eth_convert" "$@" > "$work/convert.log" 2>&1 || { cat "$work/convert.log"; false; }; }

for name in tiny-llama tiny-llama-tied; do
  model=$src/tests/cli/$name.yaml w=$work/$name
  mkdir -p "$w"
  timeout 60 "$build/tests/cli/init_checkpoint" "$model" "$w/init.h5" 7 > "$w/init.log" 2>&1
  check "$name: a checkpoint of init_parameters' values" $? "$(cat "$w/init.log")"
  for v in F32:f32:5000000000 BF16:bf16:5000000000 SHARDED:f32:20000; do
    IFS=: read -r kind dtype max <<< "$v"
    dir=$w/hf_$kind
    convert --model "$model" --export-hf "$w/init.h5" --out "$dir" --dtype "$dtype" --max-shard-size "$max" \
      && checker layout "$model" "$dir" "$w/init.h5" "${dtype^^}" $([ "$kind" = SHARDED ] && echo "$max")
    check "$name: exported ($kind): transformers' tensors and config.json" $? ""
    convert --model "$model" --import-hf "$dir" --out "$w/$kind.h5" \
      && checker same "$model" "$w/init.h5" "$w/$kind.h5" "${dtype^^}"
    check "$name: the $kind export imported equal" $? ""
  done
  checker fault "$w/hf_F32" "$w/hf_F16" f16 && convert --model "$model" --import-hf "$w/hf_F16" --out "$w/F16.h5" \
    && checker same "$model" "$w/init.h5" "$w/F16.h5" F16
  check "$name: the F32 export rewritten in F16 imported: each value A's float16" $? ""
  cp -r "$w/hf_SHARDED" "$w/over" && convert --model "$model" --export-hf "$w/init.h5" --out "$w/over" \
    && checker layout "$model" "$w/over" "$w/init.h5" F32
  check "$name: exported in one file over an earlier sharded export: its index removed" $? ""
  convert --model "$w/hf_F32/config.json" --import-hf "$w/hf_F32" --out "$w/by_config.h5" \
    && checker same "$model" "$w/init.h5" "$w/by_config.h5" F32
  check "$name: imported with the folder's config.json as --model" $? ""
done

# Fine-tuning from an import: a Llama whose MLP matrices pass its vocabulary's rows
# (tiny-llama-4l: fc_w 176 x 32 beside wte 128 x 32), exported, imported (its AdamW moments zero)
# and trained on from the import for 3 steps on one rank: every loss finite.
model=$src/inputs/models/tiny-llama-4l.yaml w=$work/finetune
mkdir -p "$w"
$py - "$w/data.bin" <<'PY'
import sys, numpy as np
h = np.zeros(256, dtype=np.int32); h[0], h[1], h[2] = 20240520, 1, 4000
open(sys.argv[1], "wb").write(h.tobytes() + (np.arange(4000) * 31 % 97).astype(np.uint16).tobytes())
PY
timeout 60 "$build/tests/cli/init_checkpoint" "$model" "$w/init.h5" 7 > "$w/init.log" 2>&1 \
  && convert --model "$model" --export-hf "$w/init.h5" --out "$w/hf" \
  && convert --model "$model" --import-hf "$w/hf" --out "$w/imported.h5" \
  && checker same "$model" "$w/init.h5" "$w/imported.h5" F32 \
  && timeout 120 "$build/app/eth_train" --model "$model" --train-data "$w/data.bin" --seq-len 16 --steps 3 \
       --batch 4 --micro-batch 2 --resume "$w/imported.h5" --output-dir "$w/run" > "$w/train.log" 2>&1 \
  && [ "$(grep -c '^step .* | loss [0-9]' "$w/train.log")" -eq 3 ]
check "tiny-llama-4l: fine-tuned from its import, 3 steps, every loss finite" $? "$(tail -3 "$w/train.log" 2>/dev/null)"

# bad CASE FROM NAME FRAGMENT...: folder FROM damaged by CASE (hf_llama_check.py) is refused.
model=$src/tests/cli/tiny-llama.yaml w=$work/tiny-llama
bad() {
  local case=$1 from=$2 name=$3
  shift 3
  checker fault "$w/$from" "$work/$case" "$case" || { check "$name: damaged" 1 "hf_llama_check.py fault"; return; }
  expect_one_error eth_convert "$name" "$@" -- \
    timeout 60 "$build/app/eth_convert" --model "$model" --import-hf "$work/$case" --out "$work/$case.h5"
  [ "$error_status" -eq 1 ] || check "$name: exit status 1" 1 "exit status $error_status"
  [ ! -e "$work/$case.h5" ] || check "$name: nothing written" 1 "$(ls "$work/$case.h5")"
}
bad missing_shard hf_SHARDED "a shard missing" "missing_shard/model.safetensors.index.json: shard \"model-00002-of-" \
  "expected a file beside the index, got none"
bad missing_tensor hf_F32 "a tensor missing" \
  "missing_tensor/model.safetensors: tensor \"model.layers.1.mlp.up_proj.weight\": expected present, of shape [88, 32]" "no such tensor"
bad wrong_shape hf_F32 "a tensor of another shape" \
  "wrong_shape/model.safetensors: tensor \"model.layers.0.self_attn.k_proj.weight\": shape: expected [16, 32], got [32, 16]"
bad config_disagrees hf_F32 "a config.json of another model" \
  "config_disagrees/config.json: num_key_value_heads: expected 2 (the model, tiny-llama), got 4"
model=$src/tests/cli/tiny-llama-tied.yaml w=$work/tiny-llama-tied
bad config_rope hf_F32 "a config.json of another rope scaling" \
  "config_rope/config.json: rope_scaling.factor: expected 8.0 (the model, tiny-llama-tied), got 16.0"
expect_one_error eth_convert "a Llama to llm.c's GPT-2 file" "tiny-llama-tied.yaml: family: expected gpt2 with GPT-2's parts" -- \
  timeout 60 "$build/app/eth_convert" --model "$model" --export-llmc "$w/init.h5" --out "$work/llmc.bin"
[ ! -e "$work/llmc.bin" ] || check "a Llama to llm.c: nothing written" 1 "$(ls "$work/llmc.bin")"
# The export options on GPT-2: --dtype bf16 imports back rounded; shards are refused (a GPT-2
# folder is read as one model.safetensors), before anything is written.
gpt2=$src/inputs/models/tiny-4l.yaml
timeout 60 "$build/tests/cli/init_checkpoint" "$gpt2" "$work/gpt2.h5" 7 > /dev/null 2>&1 \
  && convert --model "$gpt2" --export-hf "$work/gpt2.h5" --out "$work/gpt2_hf" --dtype bf16 \
  && convert --model "$gpt2" --import-hf "$work/gpt2_hf" --out "$work/gpt2_back.h5" \
  && checker same "$gpt2" "$work/gpt2.h5" "$work/gpt2_back.h5" BF16
check "GPT-2 exported in BF16, imported: each value rounded to bf16" $? ""
expect_one_error eth_convert "GPT-2 in shards" "gpt2_shards: --max-shard-size: expected at least 217984 bytes" -- \
  timeout 60 "$build/app/eth_convert" --model "$gpt2" --export-hf "$work/gpt2.h5" --out "$work/gpt2_shards" --max-shard-size 1000
[ ! -e "$work/gpt2_shards" ] || check "GPT-2 in shards: nothing written" 1 "$(ls "$work/gpt2_shards")"
expect_one_error eth_convert "an unknown --dtype" "--dtype: value: expected f32 or bf16, got f16" -- \
  timeout 60 "$build/app/eth_convert" --model "$model" --export-hf "$w/init.h5" --out "$work/x" --dtype f16
[ ! -e "$work/x" ] || check "an unknown --dtype: nothing written" 1 "$(ls "$work/x")"
finish

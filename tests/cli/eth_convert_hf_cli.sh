#!/usr/bin/env bash
# eth_convert --import-hf on damaged Hugging Face folders (lib/io/safetensors.hpp,
# lib/io/hf_gpt2.hpp, lib/io/hf_folder.hpp): each fault ends with one error line naming the
# file, the tensor or field and what was expected, and exit status 1. The good folder the faults
# are made from (F32, GPT2LMHeadModel's names, lm_head.weight included) imports.
#   eth_convert_hf_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
model=$src/inputs/models/tiny-4l.yaml
oracle() { $py "$src/tests/oracle/hf_oracle.py" "$@"; }
# One rank, started as a singleton (no mpirun), as docs/usage.md runs it: mpirun adds ~2 s to a
# failing run.
convert() { timeout 60 "$build/app/eth_convert" --model "$model" "$@"; }

oracle write "$model" 3 "$work/good:F32:lmhead" && convert --import-hf "$work/good" --out "$work/good.h5" > /dev/null \
  && $py "$src/tests/cli/hf_faults.py" "$work/good" "$work"
check "the undamaged folder imports; the damaged ones are made" $? "$(ls "$work")"

# bad CASE NAME FRAGMENT...: the good folder with fault CASE (hf_faults.py) is refused.
bad() {
  local case=$1 name=$2
  shift 2
  expect_one_error eth_convert "$name" "$@" -- convert --import-hf "$work/$case" --out "$work/$case.h5"
  [ "$error_status" -eq 1 ] || check "$name: exit status 1" 1 "exit status $error_status"
}
st=model.safetensors
pe='tensor "transformer.wpe.weight"'
bad short "a file shorter than the header length" "short/$st: header length: expected 8 bytes" "got a file of 3 bytes"
bad length_past_end "a header length past the file's end" "length_past_end/$st: header length: expected at most" "got 1099511627776"
bad not_json "a header that is not JSON" "not_json/$st: header: expected UTF-8 JSON, got a parse error"
bad not_object "a header that is not an object" "not_object/$st: header: expected a JSON object, got array"
bad size_lie "data_offsets that lie about the size" "size_lie/$st: $pe: data_offsets: expected end - begin = 1920 bytes" "[15, 32] of F32"
bad overlap "overlapping data_offsets" "overlap/$st: $pe: data_offsets: expected a begin at" "(no overlap), got begin"
bad hole "a hole between tensors" "hole/$st: tensor" "(no hole), got begin"
bad reversed "data_offsets out of order (end before begin)" "reversed/$st: $pe: data_offsets: expected begin <= end"
bad past_end "data_offsets past the file's end" "past_end/$st: tensor" "data_offsets: expected an end within the" "bytes of data after the header"
bad trailing "bytes after the last tensor" "trailing/$st: data: expected the tensors to end at the file's end" "got 8 bytes after the last tensor"
bad unknown_dtype "an unknown dtype" "unknown_dtype/$st: $pe: dtype: expected one of the safetensors dtypes" 'got "F33"'
bad int_dtype "a dtype that is not a float" "int_dtype/$st: $pe: dtype: expected F32, F16 or BF16, got I32"
bad missing "a missing tensor" "missing/$st: tensor \"transformer.h.1.ln_2.bias\": expected present, of shape [32]" "no such tensor"
bad wrong_shape "a Conv1D weight stored as nn.Linear's (3C, C)" \
  "wrong_shape/$st: tensor \"transformer.h.0.attn.c_attn.weight\": shape: expected [32, 96], got [96, 32]"
bad unknown_tensor "a tensor GPT-2 does not have" "unknown_tensor/$st: tensor \"transformer.h.0.attn.rotary\"" "a tensor GPT-2 does not have"
bad head_differs "an lm_head.weight that is not the tied embedding" "head_differs/$st: tensor \"lm_head.weight\"" \
  'equal to "transformer.wte.weight"' "row 0, column 0 first differs"
bad config_n_layer "a config.json of another model" "config_n_layer/config.json: n_layer: expected 4, as in the model YAML (tiny-4l)'s num_layers, got 2"
rm -f "$work/good/config.json"
expect_one_error eth_convert "a folder without config.json" "good/config.json: config.json: expected a GPT2Config" -- \
  convert --import-hf "$work/good" --out "$work/x.h5"
expect_one_error eth_convert "two directions at once" "exactly one of the four, got 2" -- \
  convert --import-hf "$work/good" --export-hf "$work/good.h5" --out "$work/x"
finish

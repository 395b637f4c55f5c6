#!/usr/bin/env bash
# tokenizer.json files eth_tokenize reads, made here small: merges written as "a b" and as
# ["a", "b"] give the same shard, of the ids the merges and ignore_merges call for; and each kind
# not implemented (a WordPiece or Unigram model, an NFC normalizer, a Metaspace pre-tokenizer, a
# Split regex it does not know, a non-special added token, a merge of an unknown token, a
# beginning-of-text token past the vocabulary, a file that is not JSON) ends in one error line
# naming the file and the component, exit 1, no shard.
#   tokenizer_json_bad_input.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
tokenize=$build/app/eth_tokenize
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$src/tests/cli/cli_checks.sh"

printf 'abc abd' >"$work/text.txt"
# A byte-level BPE over GPT-2's byte stand-ins: ids 0-255 the bytes, 256 "ab", 257 "abc" (whole
# only: no merge makes it), 258 "Ġab" (" ab"), 259 <|begin_of_text|>. Variants by argument.
python3 - "$work" <<'PY'
import copy, json, sys
work = sys.argv[1]
printable = lambda b: ord("!") <= b <= ord("~") or 0xA1 <= b <= 0xAC or b >= 0xAE
stand_in, n = {}, 0
for b in range(256):
    stand_in[b] = chr(b) if printable(b) else chr(256 + n)
    n += 0 if printable(b) else 1
vocab = {stand_in[b]: b for b in range(256)}
vocab.update({"ab": 256, "abc": 257, "\u0120ab": 258})
base = {
    "added_tokens": [{"id": 259, "content": "<|begin_of_text|>", "special": True}],
    "normalizer": None,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    "post_processor": None,
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
              "vocab": vocab, "merges": ["a b", "\u0120 ab"]},
}
def write(name, change=lambda j: None):
    j = copy.deepcopy(base)
    change(j)
    json.dump(j, open(f"{work}/{name}.json", "w"))
write("strings")
write("pairs", lambda j: j["model"].update(merges=[["a", "b"], ["\u0120", "ab"]]))
write("ignore_merges", lambda j: j["model"].update(ignore_merges=True))
write("wordpiece", lambda j: j.update(model={"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0}}))
write("unigram", lambda j: j.update(model={"type": "Unigram", "vocab": [["a", -1.0]]}))
write("nfc", lambda j: j.update(normalizer={"type": "NFC"}))
write("metaspace", lambda j: j.update(pre_tokenizer={"type": "Metaspace", "replacement": "\u2581"}))
write("regex", lambda j: j.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "\\p{L}+|\\s+"}, "behavior": "Isolated", "invert": False},
    {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}))
write("nonspecial", lambda j: j["added_tokens"].append({"id": 260, "content": "<tool>", "special": False}))
write("unknown_merge", lambda j: j["model"]["merges"].append("x yz"))
write("bos_out_of_range", lambda j: j.update(post_processor={"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [400], "tokens": ["<s>"]}}}))
open(f"{work}/broken.json", "w").write('{"model": ')
PY

ids() { /usr/bin/python3 -c "import sys, numpy as np; print(*np.fromfile(sys.argv[1], dtype='<u2')[512:])" "$1"; }
"$tokenize" --tokenizer "$work/strings.json" "$work/text.txt" -o "$work/strings.bin" >/dev/null 2>&1 &&
  "$tokenize" --tokenizer "$work/pairs.json" "$work/text.txt" -o "$work/pairs.bin" >/dev/null 2>&1 &&
  cmp "$work/strings.bin" "$work/pairs.bin" && [ "$(ids "$work/strings.bin")" = "259 256 99 258 100" ]
check "merges as \"a b\" and as [\"a\", \"b\"]: <|begin_of_text|> ab c Ġab d" $? "$(ids "$work/strings.bin")"
"$tokenize" --tokenizer "$work/ignore_merges.json" "$work/text.txt" -o "$work/ignore.bin" >/dev/null 2>&1 &&
  [ "$(ids "$work/ignore.bin")" = "259 257 258 100" ]
check "ignore_merges: \"abc\" is taken whole" $? "$(ids "$work/ignore.bin")"

mkdir "$work/shards"
bad() {  # bad NAME FRAGMENT...: eth_tokenize with $work/NAME.json fails with one line holding each
  local name=$1
  shift
  expect_one_error eth_tokenize "$name" "$work/$name.json" "$@" -- \
    "$tokenize" --tokenizer "$work/$name.json" "$work/text.txt" -o "$work/shards/x.bin"
}
bad wordpiece "model.type" "expected BPE" '"WordPiece"'
bad unigram "model.type" '"Unigram"'
bad nfc "normalizer" '"NFC"'
bad metaspace "pre_tokenizer" '"Metaspace"'
bad regex "pre_tokenizer.pretokenizers[0].pattern.Regex" "Llama 3's, Qwen2's or GPT-2's pattern"
bad nonspecial "added_tokens[1]" "a special token"
bad unknown_merge "model.merges[2]" "a token of model.vocab" '"yz"'
bad broken "content" "expected JSON"
bad bos_out_of_range "beginning-of-text token" "below the vocabulary's 260" "got 400"
left=$(ls -A "$work/shards")
[ -z "$left" ]
check "failed runs leave no file behind" $? "left: $left"
finish

#!/usr/bin/env bash
# eth_tokenize --tokenizer FILE.json equals Hugging Face's tokenizers.js byte for byte: both write
# llm.c shards (reference_shard.mjs writes its layout itself) of the texts in texts/ (Latin with
# accents, Cyrillic, Greek, CJK, Arabic, Devanagari, emoji with joiners and skin tones, digit runs
# of 1-10, white-space runs with tabs, newlines, CRLF, U+0085, U+FEFF and trailing spaces,
# contractions in capitals, special-token text inside documents), each one document, and of the
# King James Bible's books (all 66 with Llama 3's, and all as one document; every tenth with
# Llama 2's, whose reference takes 0.4 s a book), with Llama 3's tokenizer.json (uint32 shards: 128,256 ids) and Llama 2's
# (uint16, and uint32 on request); and GPT-2's, made from inputs/tokenizer, also against the
# built-in BPE. And the uint32 layout of GPT-2's built-in BPE
# (--token-bits 32) against the uint16 shard's ids written by numpy in llm.c's Llama 3 layout.
#   tokenizer_json_vs_tokenizersjs.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
tokenize=$build/app/eth_tokenize
source "$src/tests/tokenizer/npm_packages.sh"  # $here, $llama3, $llama2, or skip
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$src/tests/cli/cli_checks.sh"

# same NAME TOKENIZER BOS BITS [eth_tokenize options] -- FILE...: both sides' shards are equal
same() {
  local name=$1 json=$2 bos=$3 bits=$4
  shift 4
  local options=()
  while [ "$1" != "--" ]; do options+=("$1"); shift; done
  shift
  node "$here/reference_shard.mjs" "$json" "$bos" "$bits" "$work/reference.bin" "$@" >"$work/log" 2>&1 &&
    "$tokenize" --tokenizer "$json" "${options[@]}" "$@" -o "$work/ours.bin" >>"$work/log" 2>&1 &&
    cmp "$work/reference.bin" "$work/ours.bin" >>"$work/log" 2>&1
  check "$name" $? "$(cat "$work/log")"
}

texts=("$here"/texts/*.txt)
same "Llama 3, varied texts (uint32 by the vocabulary's size)" "$llama3" "<|begin_of_text|>" 32 -- "${texts[@]}"
same "Llama 2, varied texts (uint16)" "$llama2" "<s>" 16 -- "${texts[@]}"
same "Llama 2, varied texts, --token-bits 32" "$llama2" "<s>" 32 --token-bits 32 -- "${texts[@]}"
# One document of the texts 80 times (350 kB): eth_tokenize cuts it into pieces of about 256 kB
# for the threads, after a newline.
for i in $(seq 80); do cat "${texts[@]}"; done >"$work/all.txt"
same "Llama 3, the texts 80 times as one document (cut for the threads)" "$llama3" "<|begin_of_text|>" 32 -- "$work/all.txt"

# GPT-2's tokenizer.json as Hugging Face writes it (ByteLevel with its own regex), made here from
# the files of the built-in BPE: tokenizers.js's ids and the built-in BPE's, for the texts here and
# the GPT-2 test corpus.
python3 - "$src/inputs/tokenizer" "$work/gpt2.json" <<'PY'
import json, sys
folder, out = sys.argv[1:]
merges = [line for line in open(f"{folder}/vocab.bpe", encoding="utf-8").read().split("\n")[1:] if line]
json.dump({"added_tokens": [{"id": 50256, "content": "<|endoftext|>", "special": True}], "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
           "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                     "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                     "vocab": json.load(open(f"{folder}/encoder.json", encoding="utf-8")), "merges": merges}},
          open(out, "w", encoding="utf-8"))
PY
gpt2_texts=("${texts[@]}" "$src"/tests/unit/data/tokenizer/{random_text,scripts}.txt)
same "GPT-2's tokenizer.json, varied texts and the GPT-2 test corpus" "$work/gpt2.json" "<|endoftext|>" 16 -- "${gpt2_texts[@]}"
"$tokenize" "${gpt2_texts[@]}" -o "$work/builtin.bin" >/dev/null 2>&1 && cmp "$work/builtin.bin" "$work/ours.bin"
check "GPT-2's tokenizer.json equals the built-in BPE" $? "see above"

if command -v bible >/dev/null; then
  python3 "$src/inputs/data/prepare_books.py" "$work/books" >/dev/null
  same "Llama 3, the 66 books of the KJV" "$llama3" "<|begin_of_text|>" 32 -- "$work"/books/*.txt
  same "Llama 2, books 1, 11, ..., 61 of the KJV" "$llama2" "<s>" 16 -- "$work"/books/?1_*.txt
  cat "$work"/books/*.txt >"$work/kjv.txt"
  same "Llama 3, the KJV as one document (cut for the threads)" "$llama3" "<|begin_of_text|>" 32 -- "$work/kjv.txt"
else
  echo "skip: the KJV (no 'bible': apt-get install bible-kjv, as scripts/setup.sh does)"
fi

# llm.c's Llama 3 layout, written here from the uint16 shard's ids.
"$tokenize" "${texts[@]}" -o "$work/gpt2_16.bin" >/dev/null 2>&1 &&
  "$tokenize" "${texts[@]}" --token-bits 32 -o "$work/gpt2_32.bin" >/dev/null 2>&1 &&
  /usr/bin/python3 - "$work/gpt2_16.bin" "$work/gpt2_layout32.bin" <<'PY' && cmp "$work/gpt2_layout32.bin" "$work/gpt2_32.bin"
import sys
import numpy as np
tokens = np.fromfile(sys.argv[1], dtype="<u2")[512:]
header = np.zeros(256, dtype="<i4")
header[:3] = [20240801, 7, len(tokens)]
open(sys.argv[2], "wb").write(header.tobytes() + tokens.astype("<u4").tobytes())
PY
check "--token-bits 32: llm.c's Llama 3 layout of the same ids" $? "see above"

expect_one_error eth_tokenize "--token-bits 16 with 128,256 ids" "--token-bits" "128256 ids" -- \
  "$tokenize" --tokenizer "$llama3" --token-bits 16 "${texts[0]}" -o "$work/x.bin"
expect_one_error eth_tokenize "--token-bits 8" "--token-bits" "16 or 32" -- \
  "$tokenize" --token-bits 8 "${texts[0]}" -o "$work/x.bin"
[ ! -e "$work/x.bin" ]
check "no shard after a bad --token-bits" $? "$work/x.bin exists"
finish

#!/usr/bin/env bash
# Rebuilds kjv_train.bin and kjv_val.bin byte-identically from the King James text of Debian's
# bible-kjv (README.md): prepare_books.py writes the 66 books as text files, eth_tokenize turns
# them into the two shards (books 1-49 train, 50-66 val: the last round(0.2576 x 66) = 17).
#   inputs/data/rebuild.sh [ETH_TOKENIZE [OUT_DIR [DUMP]]]
# ETH_TOKENIZE defaults to build/app/eth_tokenize, OUT_DIR to inputs/data (the committed shards);
# DUMP is a saved copy of `bible -f Gen1:1-Rev22:21` to use instead of running bible.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tokenize=${1:-$here/../../build/app/eth_tokenize}
out=${2:-$here}
books=$(mktemp -d)
trap 'rm -rf "$books"' EXIT

mkdir -p "$out"
python3 "$here/prepare_books.py" "$books" ${3:+"$3"}
"$tokenize" "$books"/*.txt -o "$out/kjv_train.bin" --val-fraction 0.2576 --val-output "$out/kjv_val.bin"
cd "$out" && sha256sum kjv_train.bin kjv_val.bin

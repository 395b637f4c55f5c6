#!/usr/bin/env bash
# eth_tokenize as a program: its help names the shard files; each bad input (an empty or missing
# file, a line that is not JSON or lacks the field, a full disk) ends in one error line and a
# non-zero exit with no output left behind; and, when Debian's bible-kjv is installed,
# inputs/data/rebuild.sh rebuilds the committed KJV shards byte for byte.
#   eth_tokenize_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
tokenize=$build/app/eth_tokenize
work=$(mktemp -d)
trap 'umount "$work/small" 2>/dev/null; rm -rf "$work"' EXIT
source "$src/tests/cli/cli_checks.sh"

"$tokenize" --help >"$work/help"
grep -q "OUT_000000.bin" "$work/help"
check "--help names the shards OUT_000000.bin, ..." $? "$(cat "$work/help")"

printf 'Hello, world.\n' >"$work/hello.txt"
: >"$work/empty.txt"
printf '{"text": "a"}\nnot json\n' >"$work/bad.jsonl"
printf '{"text": "a"}\n{"body": "b"}\n' >"$work/nofield.jsonl"
mkdir "$work/shards"
expect_one_error eth_tokenize "empty input" "$work/empty.txt" "an empty file" -- \
  "$tokenize" "$work/empty.txt" -o "$work/shards/x.bin"
expect_one_error eth_tokenize "unreadable input" "$work/missing.txt" "No such file" -- \
  "$tokenize" "$work/hello.txt" "$work/missing.txt" -o "$work/shards/x.bin"
expect_one_error eth_tokenize "a JSONL line that is not JSON" "$work/bad.jsonl: line 2" "one JSON object per line" -- \
  "$tokenize" "$work/bad.jsonl" --jsonl-field text -o "$work/shards/x.bin"
expect_one_error eth_tokenize "a JSONL line without the field" "$work/nofield.jsonl: line 2" 'field "text"' "no such field" -- \
  "$tokenize" "$work/nofield.jsonl" --jsonl-field text -o "$work/shards/x.bin"
expect_one_error eth_tokenize "a full device" "/dev/full" "No space left on device" -- \
  "$tokenize" "$work/hello.txt" -o /dev/full
expect_one_error eth_tokenize "validation output on a full device" "/dev/full" "No space left on device" -- \
  "$tokenize" "$work/hello.txt" "$work/hello.txt" -o "$work/shards/x.bin" --val-fraction 0.5 --val-output /dev/full
left=$(ls -A "$work/shards")
[ -z "$left" ]
check "failed runs leave no file behind" $? "left: $left"

# A full file system: a 64 KiB tmpfs cannot hold the 66 KiB shard (root only; skipped otherwise).
mkdir "$work/small"
if mount -t tmpfs -o size=64k tmpfs "$work/small" 2>/dev/null; then
  expect_one_error eth_tokenize "a full file system" "$work/small/x.bin" "No space left on device" -- \
    "$tokenize" "$src/tests/unit/data/tokenizer/random_text.txt" -o "$work/small/x.bin"
  left=$(ls -A "$work/small")
  [ -z "$left" ]
  check "a full file system keeps no partial shard" $? "left: $left"
else
  echo "skip: a full file system (cannot mount a tmpfs here)"
fi

if command -v bible >/dev/null; then
  "$src/inputs/data/rebuild.sh" "$tokenize" "$work/kjv" >"$work/kjv.log" 2>&1
  cmp "$work/kjv/kjv_train.bin" "$src/inputs/data/kjv_train.bin" && cmp "$work/kjv/kjv_val.bin" "$src/inputs/data/kjv_val.bin"
  check "inputs/data/rebuild.sh rebuilds kjv_train.bin and kjv_val.bin byte-identically" $? "$(cat "$work/kjv.log")"
else
  echo "skip: the KJV rebuild (no 'bible': apt-get install bible-kjv, as scripts/setup.sh does)"
fi
finish

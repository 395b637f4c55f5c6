#!/usr/bin/env bash
# scripts/check_bench_stamps.py passes on the tree's bench/results/ and fails, naming the file
# and the field, on a results folder with a file that lacks its load and one with no stamp.
set -uo pipefail
root=${1:?usage: check_bench_stamps_test.sh REPO_ROOT}
check=$root/scripts/check_bench_stamps.py
python3 "$check" "$root" || { echo "FAIL: a result file in the tree lacks its stamp"; exit 1; }

copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
mkdir -p "$copy/bench/results/gpu"
echo '{"commit": "abc", "host": "h", "load": {"start": 1.5, "end": 2}, "date": "2026-12-01T00:00:00Z"}' > "$copy/bench/results/good.json"
echo '{"commit": "abc", "host": "h", "date": "2026-12-01T00:00:00Z"}' > "$copy/bench/results/gpu/no_load.json"
echo '{"benchmark": "x"}' > "$copy/bench/results/bare.json"
out=$(python3 "$check" "$copy" 2>&1); status=$?
echo "$out"
fail=0
[ "$status" -ne 0 ] || { echo "FAIL: the check passed result files without a stamp"; fail=1; }
for want in "gpu/no_load.json: expected load" "bare.json: expected commit" "1 of 3 result files stamped"; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: the check did not say '$want'"; fail=1; }
done
exit $fail

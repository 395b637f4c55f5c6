#!/usr/bin/env bash
# Fuzzes every parser of user input (tests/fuzz: topology, plan, model, profile, token shard,
# checkpoint, safetensors, eth_tokenize's JSON Lines) with clang's libFuzzer under ASan and
# UBSan, SECONDS each (default 20; as many targets at once as there are cores), starting from
# the committed seed corpora (copied: the corpora in git stay the seeds and the regression
# inputs). Prints each target's executions and coverage; fails on any crash, sanitizer report,
# uncaught exception or hang (-timeout=10 per input), leaving the input in build-fuzz/findings/.
# A finding is fixed, then its input is added to tests/fuzz/corpus/TARGET/ as a regression input.
#   bash scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
source scripts/env.sh
source scripts/stages.sh
build() {
  [ -f build-fuzz/CMakeCache.txt ] ||
    CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DETH_CUDA=OFF \
      -DETH_FUZZ=ON > /dev/null || return
  cmake --build build-fuzz --target fuzz_all -j"$(nproc)"
}
stage "fuzz build" build
mkdir -p build-fuzz/findings

# fuzz_target TARGET: TARGET for $seconds from a copy of its seed corpus; prints one line of what
# it did, and returns 1 on a finding.
fuzz_target() {
  local target=$1 work=build-fuzz/corpus/$1 log=build-fuzz/findings/$1.log leaks=1
  rm -rf "$work" && mkdir -p "$work" && cp tests/fuzz/corpus/"$target"/* "$work"/ || return 1
  # HDF5 keeps free lists and caches across files, which libFuzzer's per-input leak check reports
  # as leaks (the inputs it flagged run clean alone, LeakSanitizer at exit included); the other
  # targets keep it.
  [ "$target" != checkpoint ] || leaks=0
  if build-fuzz/tests/fuzz/fuzz_"$target" -max_total_time="$seconds" -timeout=10 -detect_leaks=$leaks \
      -artifact_prefix=build-fuzz/findings/"$target"- "$work" > "$log" 2>&1; then
    echo "fuzz_$target: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | sed -E 's/^#([0-9]+)[[:space:]]+DONE[[:space:]]+cov: ([0-9]+) ft: ([0-9]+).*exec\/s: ([0-9]+).*/\1 executions, coverage \2 edges, \3 features, \4 exec\/s/')"
  else
    echo "fuzz_$target: FAILED:"
    grep -E "ERROR|SUMMARY|Test unit written|deadly signal|uncaught" "$log" | head -8
    return 1
  fi
}
export -f fuzz_target
export seconds
# Every target, as many at once as there are cores (a fuzzer runs on one); fails if any does.
fuzz_all() { ls tests/fuzz/corpus | xargs -P "$(nproc)" -I{} bash -c 'fuzz_target "$1"' _ {}; }
stage "fuzz" fuzz_all

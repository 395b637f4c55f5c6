#!/usr/bin/env bash
# The unit and MPI tests built with AddressSanitizer and UndefinedBehaviorSanitizer (gcc,
# -fsanitize=address,undefined, every UB report fatal) in build-sanitize. Leaks are reported too,
# except allocations made inside Open MPI, PMIx, hwloc, libevent and HDF5, which keep state until
# exit (scripts/lsan.supp). Any report fails the test that triggered it.
#   bash scripts/sanitize.sh [CTEST ARGS...]      (default: -L "unit|mpi")
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
if [ ! -f build-sanitize/CMakeCache.txt ]; then
  cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DETH_CUDA=OFF \
    -DETH_SANITIZE=address,undefined > /dev/null
fi
cmake --build build-sanitize -j"$(nproc)"
export ASAN_OPTIONS=abort_on_error=0:detect_leaks=1:strict_string_checks=1
export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd build-sanitize
if [ $# -eq 0 ]; then set -- -L "unit|mpi"; fi
ctest --output-on-failure -j2 "$@"

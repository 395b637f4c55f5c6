#!/usr/bin/env bash
# The unit and MPI tests built with AddressSanitizer and UndefinedBehaviorSanitizer (gcc,
# -fsanitize=address,undefined, every UB report fatal) in build-sanitize. Any report fails the test
# that triggered it. Leaks are checked in the unit tests (except allocations Open MPI, PMIx,
# hwloc, libevent and HDF5 keep until exit: scripts/lsan.supp) but not under mpirun: Open MPI's
# components are dlopen'ed and unloaded before LeakSanitizer looks, so their allocations show as
# leaks from "<unknown module>" that no suppression can name.
# random_plans_nccl and random_plans_bf16 are left out here (CI's 45 minutes): the sanitized
# build runs the same 20 plans in random_plans, NCCL's emulation in the _nccl equivalence tests,
# and the bf16 twin backend in test_bf16 and the equivalence_bf16 tests; the
# equivalence_cuda_emulated tests and oracle_torch_cuda_emulated too: the interpreted kernels run
# sanitized in the unit tests (gpu_checks_emulated, test_gpu_*_interpreted, test_generation); and
# the generation and Hugging Face program tests (sample_cli, hf_interop, eth_convert_hf_cli): their
# readers are fuzzed under ASan (scripts/fuzz.sh), generation runs sanitized in test_generation.
#   bash scripts/sanitize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
source scripts/stages.sh
# -O1 -g1: line tables for the reports' stack traces, no variable locations, and ASan's advice
# for its builds; it halves the compile of a heavy file against -O2 -g (lib/io/metrics.cpp: 6 s
# against 13), and the tests, mostly process start-up, barely notice.
build() {
  [ -f build-sanitize/CMakeCache.txt ] ||
    cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DETH_CUDA=OFF -DETH_BENCHMARKS=OFF \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
      -DETH_SANITIZE=address,undefined > /dev/null || return
  cmake --build build-sanitize -j"$(nproc)"
}
stage "sanitized build" build
export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd build-sanitize
status=0
stage "sanitized unit tests" env ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1 \
  ctest --output-on-failure -j"$ctest_jobs" -L unit -E oracle_torch_cuda_emulated || status=1
stage "sanitized MPI tests" env ASAN_OPTIONS=detect_leaks=0:strict_string_checks=1 \
  ctest --output-on-failure -j"$ctest_jobs" -L mpi -E "random_plans_nccl|random_plans_bf16|equivalence_cuda_emulated|sample_cli|hf_interop|eth_convert_hf_cli" || status=1
exit $status

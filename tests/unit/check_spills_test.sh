#!/usr/bin/env bash
# scripts/check_spills.py on the build's kernels/cuda/*.cu: none spills at sm_80 or sm_90 (it
# prints the table), and the bf16 flash attention's PTX holds mma.sync. Then on a fixture, so
# that the check is seen to fail: a kernel held to 16 registers that keeps 48 values live must be
# named as spilling at both targets, its small neighbour not, the fixture's own target (sm_75)
# and output path replaced, and the fixture, which has no mma.sync, named for lacking it.
set -uo pipefail
root=${1:?usage: check_spills_test.sh REPO_ROOT BUILD_DIR NVCC}
build=${2:?usage: check_spills_test.sh REPO_ROOT BUILD_DIR NVCC}
nvcc=${3:?usage: check_spills_test.sh REPO_ROOT BUILD_DIR NVCC}
check=$root/scripts/check_spills.py
fail=0
start=$SECONDS
python3 "$check" "$build" --require-mma "$root/kernels/cuda/flash_attention16.cu" ||
  { echo "FAIL: a kernel of the build spills, flash_attention16.cu has no mma.sync, or the check could not run"; fail=1; }
echo "(the build's kernels: $((SECONDS - start)) s)"

fixture=$(mktemp -d)
trap 'rm -rf "$fixture"' EXIT
mkdir -p "$fixture/kernels/cuda"
cat > "$fixture/kernels/cuda/fixture.cu" <<'CU'
__global__ void spilling_kernel(float* out, const float* in) {
  float r[48];
#pragma unroll
  for (int i = 0; i < 48; i++) r[i] = in[i * 1024 + threadIdx.x];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 48; i++) s += r[i] * r[47 - i];
  out[threadIdx.x] = s;
}
__global__ void small_kernel(float* out, const float* in) { out[threadIdx.x] = 2.f * in[threadIdx.x]; }
CU
cat > "$fixture/compile_commands.json" <<JSON
[{"directory": "$fixture",
  "command": "$nvcc -maxrregcount=16 --generate-code=arch=compute_75,code=[sm_75] -x cu -c $fixture/kernels/cuda/fixture.cu -o fixture.o",
  "file": "$fixture/kernels/cuda/fixture.cu"}]
JSON
out=$(python3 "$check" "$fixture" --require-mma "$fixture/kernels/cuda/fixture.cu" 2>&1); status=$?
echo "$out"
[ "$status" -ne 0 ] || { echo "FAIL: the check passed a kernel that spills"; fail=1; }
for want in "FAIL: spilling_kernel (fixture.cu) spills at sm_80" "FAIL: spilling_kernel (fixture.cu) spills at sm_90"; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: the check did not say '$want'"; fail=1; }
done
grep -qF "FAIL: $fixture/kernels/cuda/fixture.cu has no mma.sync" <<<"$out" ||
  { echo "FAIL: the check did not name the fixture for its missing mma.sync"; fail=1; }
grep -q "^FAIL: small_kernel" <<<"$out" && { echo "FAIL: the check named small_kernel, which does not spill"; fail=1; }
grep -q "^small_kernel .* sm_80 " <<<"$out" || { echo "FAIL: the table lacks small_kernel at sm_80"; fail=1; }
grep -q "sm_75" <<<"$out" && { echo "FAIL: the fixture's own target sm_75 was compiled"; fail=1; }
[ -e "$fixture/fixture.o" ] && { echo "FAIL: the check wrote the build's output file"; fail=1; }
echo "(wall time in all: $((SECONDS - start)) s)"
exit $fail

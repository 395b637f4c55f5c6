// fp32 -> bf16 -> fp32 rounding on the CPU: the reference twin of the CUDA path's
// __float2bfloat16_rn (kernels/cuda/elementwise.cu). bf16 is fp32's upper 16 bits (sign, the
// same 8 exponent bits, 7 mantissa bits), so rounding is integer arithmetic on the bit pattern:
// add half an ulp of bf16, less one, plus the kept lowest bit (ties to even), then cut. This is
// exact for normal and denormal values alike, overflows to infinity as the hardware does, and
// keeps infinities; a NaN stays a NaN (quietened, so that cutting its payload cannot make it an
// infinity).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace eth::kernels::cpu {

inline float round_to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    bits = (bits | 0x00400000u) & 0xffff0000u;
  } else {
    bits += 0x7fffu + ((bits >> 16) & 1u);
    bits &= 0xffff0000u;
  }
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// out[i] = round_to_bf16(inp[i]); out may be inp.
inline void round_to_bf16(float* out, const float* inp, size_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
  for (size_t i = 0; i < n; i++) out[i] = round_to_bf16(inp[i]);
}

}  // namespace eth::kernels::cpu

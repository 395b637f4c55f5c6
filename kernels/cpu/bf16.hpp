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

#include "kernels/bf16.hpp"

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

// The stored forms (kernels/bf16.hpp): the bf16 nearest to x, and a bf16's exact fp32 value.
inline bf16 to_bf16(float x) {
  uint32_t bits;
  const float rounded = round_to_bf16(x);
  std::memcpy(&bits, &rounded, sizeof bits);
  return bf16{static_cast<uint16_t>(bits >> 16)};
}
inline float to_float(bf16 h) {
  const uint32_t bits = uint32_t{h.bits} << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

}  // namespace eth::kernels::cpu

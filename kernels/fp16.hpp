// fp16 (IEEE 754 binary16) in memory: sign, 5 exponent bits, 10 mantissa bits; largest finite
// value 65504, smallest subnormal 2^-24, unit roundoff 2^-11. The same two bytes as CUDA's
// __half and cuBLASLt's CUDA_R_16F. A plain struct, as bf16 is (kernels/bf16.hpp): every
// computation converts to fp32 first.
//
// The conversions are bit arithmetic, written once for every host side (the CPU twin, the kernel
// interpreter); a GPU converts with __float2half_rn, which rounds the same way: to nearest, ties to
// even, subnormals kept, values from 65520 on (half an ulp past the largest) to infinity,
// infinities kept, a NaN a (quiet) NaN.
#pragma once

#include <cstdint>
#include <cstring>

namespace eth::kernels {

struct fp16 {
  uint16_t bits;
};
static_assert(sizeof(fp16) == 2 && alignof(fp16) == 2);

// The fp16 nearest to x, as raw bits.
inline uint16_t fp16_bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u | static_cast<uint16_t>((magnitude >> 13) & 0x3ffu);  // NaN
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up, and infinity: infinity
  if (magnitude >= 0x38800000u) {                       // 2^-14 and up: a normal fp16
    // Rebias the exponent (127 -> 15), add half an ulp less one plus the kept lowest bit (ties to
    // even), cut the 13 extra mantissa bits; a carry moves into the exponent, as it should.
    magnitude += 0xc8000fffu + ((magnitude >> 13) & 1u);
    return sign | static_cast<uint16_t>(magnitude >> 13);
  }
  // A subnormal fp16 (or zero): the value in units of 2^-24, rounded to nearest even.
  const uint32_t exponent = magnitude >> 23;
  if (exponent < 102) return sign;  // below 2^-25: rounds to zero
  const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - exponent;  // 14 .. 24
  uint32_t units = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (units & 1u))) units++;
  return sign | static_cast<uint16_t>(units);
}

// An fp16's exact fp32 value.
inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f)
    bits = sign | 0x7f800000u | (mantissa << 13);
  else if (exponent != 0)
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  else if (mantissa == 0)
    bits = sign;
  else {  // subnormal: mantissa * 2^-24, exact in fp32
    float x = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    std::memcpy(&bits, &x, sizeof bits);
    bits |= sign;
  }
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

}  // namespace eth::kernels

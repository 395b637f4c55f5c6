// Plain values of the dialect, the same on both sides: launch shapes, a pair of floats, bf16 and
// fp16 packing, and the math functions kernels call (CUDA's on the device, <cmath>'s on the host).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/bf16.hpp"
#include "kernels/fp16.hpp"
#include "kernels/simt/qualifiers.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#else
#include <algorithm>
#include <cmath>
#endif

namespace eth::kernels::simt {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr Dim3() = default;
  SIMT_HOST_DEVICE constexpr Dim3(unsigned x_, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
  SIMT_HOST_DEVICE constexpr size_t count() const { return size_t{x} * y * z; }
};

// What one kernel launch runs on: grid, block and the bytes of shared memory per block.
struct LaunchShape {
  Dim3 grid;
  Dim3 block;
  size_t shared_bytes = 0;
};

struct alignas(8) Float2 {
  float x, y;
};

// W values of type V read or written in one access: 16 bytes for 8 16-bit values, the widest
// load or store a thread issues (the memory behind it must be aligned to it).
template <class V, int W>
struct alignas(sizeof(V) * W) Packed {
  V h[W];
};

SIMT_HOST_DEVICE int imin(int a, int b) { return a < b ? a : b; }
SIMT_HOST_DEVICE int imax(int a, int b) { return a > b ? a : b; }

#if defined(__CUDACC__)
SIMT_DEVICE float expf_(float x) { return ::expf(x); }
SIMT_DEVICE float logf_(float x) { return ::logf(x); }
SIMT_DEVICE float exp2f_(float x) { return ::exp2f(x); }
SIMT_DEVICE float log2f_(float x) { return ::log2f(x); }
SIMT_DEVICE float tanhf_(float x) { return ::tanhf(x); }
SIMT_DEVICE float sinf_(float x) { return ::sinf(x); }
SIMT_DEVICE float cosf_(float x) { return ::cosf(x); }
SIMT_DEVICE float sqrtf_(float x) { return ::sqrtf(x); }
SIMT_DEVICE float fmaxf_(float a, float b) { return ::fmaxf(a, b); }
SIMT_DEVICE double sqrt_(double x) { return ::sqrt(x); }
SIMT_DEVICE double log_(double x) { return ::log(x); }
// fp32 -> bf16, round to nearest even (the hardware conversion), as raw bits.
SIMT_HOST_DEVICE uint16_t bf16_bits(float x) {
  const __nv_bfloat16 h = __float2bfloat16_rn(x);
  return *reinterpret_cast<const uint16_t*>(&h);
}
// fp32 -> fp16 and back, the hardware's conversions (round to nearest even; exact).
SIMT_HOST_DEVICE uint16_t fp16_bits_(float x) { return static_cast<__half_raw>(__float2half_rn(x)).x; }
SIMT_HOST_DEVICE float fp16_to_float_(uint16_t h) {
  __half_raw raw;
  raw.x = h;
  return __half2float(__half(raw));
}
#else
namespace host {
// The running launch's counters (interpreter.cpp; nothing unless they are on): a call of a
// special function (the GPU's SFU: exp, log, tanh, sin, cos, sqrt), `n` operations in FP64.
void count_special();
void count_fp64(uint64_t n);
}  // namespace host
inline float expf_(float x) { return host::count_special(), std::exp(x); }
inline float logf_(float x) { return host::count_special(), std::log(x); }
inline float exp2f_(float x) { return host::count_special(), std::exp2(x); }
inline float log2f_(float x) { return host::count_special(), std::log2(x); }
inline float tanhf_(float x) { return host::count_special(), std::tanh(x); }
inline float sinf_(float x) { return host::count_special(), std::sin(x); }
inline float cosf_(float x) { return host::count_special(), std::cos(x); }
inline float sqrtf_(float x) { return host::count_special(), std::sqrt(x); }
inline float fmaxf_(float a, float b) { return std::fmax(a, b); }
inline double sqrt_(double x) { return host::count_fp64(1), std::sqrt(x); }
inline double log_(double x) { return host::count_fp64(1), std::log(x); }
// The same conversion in bit arithmetic (kernels/cpu/bf16.hpp is the twin it must equal): add
// half a bf16 ulp less one plus the kept lowest bit (ties to even), cut; NaN stays NaN, quietened.
inline uint16_t bf16_bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits | 0x00400000u) >> 16);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
// fp16's conversions in bit arithmetic (kernels/fp16.hpp, which the CPU twin uses too).
inline uint16_t fp16_bits_(float x) { return fp16_bits(x); }
inline float fp16_to_float_(uint16_t h) { return fp16_to_float(h); }
#endif

SIMT_HOST_DEVICE float bf16_to_float(uint16_t h) {
  const uint32_t bits = uint32_t{h} << 16;
  float x;
  memcpy(&x, &bits, sizeof x);
  return x;
}
SIMT_HOST_DEVICE float round_to_bf16(float x) { return bf16_to_float(bf16_bits(x)); }
// The stored form (kernels/bf16.hpp): a kernel loads bf16, computes in fp32, stores bf16.
SIMT_HOST_DEVICE bf16 to_bf16(float x) { return bf16{bf16_bits(x)}; }
SIMT_HOST_DEVICE float to_float(bf16 h) { return bf16_to_float(h.bits); }
SIMT_HOST_DEVICE fp16 to_fp16(float x) { return fp16{fp16_bits_(x)}; }
SIMT_HOST_DEVICE float to_float(fp16 h) { return fp16_to_float_(h.bits); }
// Kernels written once for any stored element type T (float, bf16 or fp16): load with to_float,
// store with from_float<T>; an fp32 master read as the path's copy with as_copy<T> (the embedding's
// tables, whose rows it reads are known on the device only).
SIMT_HOST_DEVICE float to_float(float x) { return x; }
template <class T>
SIMT_HOST_DEVICE T from_float(float x) {
  if constexpr (std::is_same_v<T, bf16>)
    return to_bf16(x);
  else if constexpr (std::is_same_v<T, fp16>)
    return to_fp16(x);
  else
    return x;
}
template <class T>
SIMT_HOST_DEVICE float as_copy(float master) {
  return to_float(from_float<T>(master));
}
// A kernel's name by its element type, for the counts and the profiles.
template <class T>
constexpr const char* named(const char* fp32_name, const char* bf16_name, const char* fp16_name) {
  return std::is_same_v<T, bf16> ? bf16_name : std::is_same_v<T, fp16> ? fp16_name : fp32_name;
}
// Two 16-bit values of type E (bf16 or fp16) in one 32-bit register, `lo` rounded into the low
// half: the operand form of mma and ldmatrix.
template <class E>
SIMT_HOST_DEVICE uint32_t pack2(float lo, float hi) {
  static_assert(sizeof(E) == 2);
  return uint32_t{from_float<E>(lo).bits} | (uint32_t{from_float<E>(hi).bits} << 16);
}
template <class E>
SIMT_HOST_DEVICE float unpack_lo(uint32_t r) { return to_float(E{static_cast<uint16_t>(r & 0xffffu)}); }
template <class E>
SIMT_HOST_DEVICE float unpack_hi(uint32_t r) { return to_float(E{static_cast<uint16_t>(r >> 16)}); }

}  // namespace eth::kernels::simt

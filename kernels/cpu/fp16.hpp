// fp32 -> fp16 -> fp32 on the CPU: the reference twin of the GPU's __float2half_rn, the bit
// arithmetic of kernels/fp16.hpp; and the stored forms of the 16-bit paths by element type, for
// code written once for bf16 and fp16.
#pragma once

#include <cmath>
#include <cstddef>
#include <type_traits>

#include "kernels/cpu/bf16.hpp"
#include "kernels/fp16.hpp"
#include "kernels/tensor.hpp"

namespace eth::kernels::cpu {

inline fp16 to_fp16(float x) { return fp16{fp16_bits(x)}; }
inline float to_float(fp16 h) { return fp16_to_float(h.bits); }
inline float round_to_fp16(float x) { return to_float(to_fp16(x)); }

// x stored as E (float, bf16 or fp16): rounded to nearest even where E is narrower.
template <class E>
E stored(float x) {
  if constexpr (std::is_same_v<E, bf16>)
    return to_bf16(x);
  else if constexpr (std::is_same_v<E, fp16>)
    return to_fp16(x);
  else
    return x;
}
inline float to_float(float x) { return x; }

// out[i] = inp[i] rounded to E, held in fp32; out may be inp.
template <class E>
void round_to(float* out, const float* inp, size_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
  for (size_t i = 0; i < n; i++) out[i] = to_float(stored<E>(inp[i]));
}

// out[i] = inp[i] in O's form (through fp32: exact when widening).
template <class O, class I>
void convert(O* out, const I* inp, size_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
  for (size_t i = 0; i < n; i++) out[i] = stored<O>(to_float(inp[i]));
}

// convert, a finite value that would overflow O clamped to O's largest finite value (its sign
// kept); returns how many were. out may be inp where O and I are of one width.
template <class O, class I>
size_t convert_saturating(O* out, const I* inp, size_t n) {
  constexpr float largest = kLargestFinite<O>;
  size_t clamped = 0;
#pragma omp parallel for schedule(static) reduction(+ : clamped) if (n > 65536)
  for (size_t i = 0; i < n; i++) {
    const float x = to_float(inp[i]);
    O y = stored<O>(x);
    if (std::isfinite(x) && std::isinf(to_float(y))) {
      y = stored<O>(x > 0 ? largest : -largest);
      clamped++;
    }
    out[i] = y;
  }
  return clamped;
}

}  // namespace eth::kernels::cpu

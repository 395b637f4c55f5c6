// GELU (tanh approximation), the residual add and bf16 rounding: grid-stride loops, one element
// per thread step; GELU and the residual add for fp32 and bf16 storage alike. The GELU
// expressions are the CPU twin's, term for term. gelu_backward may run in place (dinp == dout,
// as lib/model/stage.cpp calls it): each element is read before it is written, by the same thread.
#pragma once

#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/ops.hpp"
#include "kernels/tensor.hpp"

namespace eth::kernels::gpu_ops {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;
constexpr float kGeluCubic3 = static_cast<float>(3 * 0.044715);
constexpr int kElementwiseThreads = 256;

// GPT-2's GELU and its derivative: the one expression of the GELU kernels, the bf16 matmuls'
// dGELU kernel and HostLaunch's cuBLASLt epilogues (on the host SIMT_DEVICE is plain inline).
SIMT_DEVICE float gelu(float x) { return 0.5f * x * (1.f + simt::tanhf_(kGeluScale * (x + kGeluCubic * x * x * x))); }
SIMT_DEVICE float gelu_grad(float x) {
  const float th = simt::tanhf_(kGeluScale * (x + kGeluCubic * x * x * x));
  const float sech2 = 1.f - th * th;
  return 0.5f * (1.f + th) + 0.5f * x * sech2 * kGeluScale * (1.f + kGeluCubic3 * x * x);
}

// Each for T = float and T = bf16 (loaded as fp32, computed in fp32, stored as T).
template <class T>
struct GeluForwardKernel {
  static constexpr const char* kName = simt::named<T>("gelu_forward", "gelu_forward_bf16", "gelu_forward_fp16");
  Global<T> out;        // (n)
  Global<const T> inp;  // (n)
  size_t n;
  SIMT_DEVICE void operator()(Thread& t) const {
    for (size_t i = global_index(t); i < n; i += grid_stride(t)) out[i] = simt::from_float<T>(gelu(simt::to_float(inp[i])));
  }
};

template <class T>
struct GeluBackwardKernel {
  static constexpr const char* kName = simt::named<T>("gelu_backward", "gelu_backward_bf16", "gelu_backward_fp16");
  Global<T> dinp;        // (n)
  Global<const T> inp;   // (n)
  Global<const T> dout;  // (n)
  size_t n;
  SIMT_DEVICE void operator()(Thread& t) const {
    for (size_t i = global_index(t); i < n; i += grid_stride(t))
      dinp[i] = simt::from_float<T>(gelu_grad(simt::to_float(inp[i])) * simt::to_float(dout[i]));
  }
};

template <class T>
struct ResidualForwardKernel {
  static constexpr const char* kName =
      simt::named<T>("residual_forward", "residual_forward_bf16", "residual_forward_fp16");
  Global<T> out;         // (n)
  Global<const T> a, b;  // (n)
  size_t n;
  SIMT_DEVICE void operator()(Thread& t) const {
    for (size_t i = global_index(t); i < n; i += grid_stride(t))
      out[i] = simt::from_float<T>(simt::to_float(a[i]) + simt::to_float(b[i]));
  }
};

// The hardware's fp32 -> E conversion (E = bf16 or fp16), round to nearest even, the value held
// in fp32: what a kernel of the 16-bit paths does when it stores. kernels/cpu/bf16.hpp and
// kernels/fp16.hpp are its CPU twins. May run in place.
template <class E>
struct RoundToKernel {
  static constexpr const char* kName = simt::named<E>("round_to_fp32", "round_to_bf16", "round_to_fp16");
  Global<float> out;        // (n)
  Global<const float> inp;  // (n)
  size_t n;
  SIMT_DEVICE void operator()(Thread& t) const {
    for (size_t i = global_index(t); i < n; i += grid_stride(t)) out[i] = simt::to_float(simt::from_float<E>(inp[i]));
  }
};

// Between the stored forms: to bf16 or fp16 (the same rounding), to fp32 (exact), through fp32.
template <class O, class I>
struct ConvertKernel {
  static constexpr const char* kName = std::is_same_v<O, float> ? simt::named<I>("copy", "convert_from_bf16",
                                                                                  "convert_from_fp16")
                                                                : simt::named<O>("copy", "convert_to_bf16",
                                                                                  "convert_to_fp16");
  Global<O> out;        // (n)
  Global<const I> inp;  // (n)
  size_t n;
  SIMT_DEVICE void operator()(Thread& t) const {
    for (size_t i = global_index(t); i < n; i += grid_stride(t)) out[i] = simt::from_float<O>(simt::to_float(inp[i]));
  }
};

// Neither infinite nor NaN (a NaN fails both comparisons), without the math library.
SIMT_DEVICE bool is_finite(float x) { return x >= -kLargestFinite<float> && x <= kLargestFinite<float>; }

// ConvertKernel where a finite value that would overflow O is clamped to O's largest (its sign
// kept) and counted: each thread adds its count once, an integer sum in any order. May run in
// place where O and I are of one width (each element is read before it is written, by one thread).
template <class O, class I>
struct ConvertSaturatingKernel {
  static constexpr const char* kName =
      simt::named<O>("convert_saturating_to_fp32", "convert_saturating_to_bf16", "convert_saturating_to_fp16");
  Global<O> out;        // (n)
  Global<const I> inp;  // (n)
  size_t n;
  Global<unsigned> saturated;  // (1) += the values clamped
  SIMT_DEVICE void operator()(Thread& t) const {
    const float largest = kLargestFinite<O>;
    unsigned clamped = 0;
    for (size_t i = global_index(t); i < n; i += grid_stride(t)) {
      const float x = simt::to_float(inp[i]);
      O y = simt::from_float<O>(x);
      if (is_finite(x) && !is_finite(simt::to_float(y))) {
        y = simt::from_float<O>(x > 0 ? largest : -largest);
        clamped++;
      }
      out[i] = y;
    }
    if (clamped > 0) t.atomic_add(saturated, clamped);
  }
};

inline LaunchShape elementwise_shape(size_t n) {
  return {Dim3(grid_for(n, kElementwiseThreads)), Dim3(kElementwiseThreads), 0};
}

template <class Launch, class T>
void gelu_forward(Launch& launch, T* out, const T* inp, size_t n) {
  if (n > 0) launch.kernel(GeluForwardKernel<T>{out, inp, n}, elementwise_shape(n));
}

template <class Launch, class T>
void gelu_backward(Launch& launch, T* dinp, const T* inp, const T* dout, size_t n) {
  if (n > 0) launch.kernel(GeluBackwardKernel<T>{dinp, inp, dout, n}, elementwise_shape(n));
}

template <class Launch, class T>
void residual_forward(Launch& launch, T* out, const T* a, const T* b, size_t n) {
  if (n > 0) launch.kernel(ResidualForwardKernel<T>{out, a, b, n}, elementwise_shape(n));
}

template <class Launch, class E>
void round_to(Launch& launch, float* out, const float* inp, size_t n) {
  if (n > 0) launch.kernel(RoundToKernel<E>{out, inp, n}, elementwise_shape(n));
}

template <class Launch, class O, class I>
void convert(Launch& launch, O* out, const I* inp, size_t n) {
  if (n > 0) launch.kernel(ConvertKernel<O, I>{out, inp, n}, elementwise_shape(n));
}

template <class Launch, class O, class I>
void convert_saturating(Launch& launch, O* out, const I* inp, size_t n, unsigned* saturated) {
  if (n > 0) launch.kernel(ConvertSaturatingKernel<O, I>{out, inp, n, saturated}, elementwise_shape(n));
}

}  // namespace eth::kernels::gpu_ops

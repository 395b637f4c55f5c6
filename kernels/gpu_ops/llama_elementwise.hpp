// The llama family's elementwise kernels, on T (or E) = float, bf16 or fp16 (loaded as fp32, computed
// in fp32, stored as T), each the CPU twin's expression term for term (kernels/cpu/llama_ops.cpp):
//   SwiGLU: out = silu(gate) * up over (N, 2 FC) rows of gate then up, and its backward;
//   rotary positions: each thread turns one pair (x_i, x_{i + hs/2}) of one q or k head of one
//   row by the angle (T0 + t) inv_freq[i] (fp32, its cos and sin on the special-function unit),
//   forward or (sign -1) by its transpose, in place: each pair is read and written by one thread.
// Grid-stride loops over the outputs, one element (or pair) per thread step.
#pragma once

#include "kernels/attention_heads.hpp"
#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/elementwise.hpp"

namespace eth::kernels::gpu_ops {

template <class T>
struct SwiGluForwardKernel {
  static constexpr const char* kName = simt::named<T>("swiglu_forward", "swiglu_forward_bf16", "swiglu_forward_fp16");
  Global<T> out;        // (N, FC)
  Global<const T> inp;  // (N, 2 FC)
  size_t n;             // N FC
  int FC;
  SIMT_DEVICE void operator()(Thread& t) const {
    for (size_t i = global_index(t); i < n; i += grid_stride(t)) {
      const size_t gate = i / FC * 2 * FC + i % FC;
      const float g = simt::to_float(inp[gate]), u = simt::to_float(inp[gate + FC]);
      out[i] = simt::from_float<T>(g / (1.f + simt::expf_(-g)) * u);
    }
  }
};

template <class T>
struct SwiGluBackwardKernel {
  static constexpr const char* kName =
      simt::named<T>("swiglu_backward", "swiglu_backward_bf16", "swiglu_backward_fp16");
  Global<T> dinp;        // (N, 2 FC)
  Global<const T> inp;   // (N, 2 FC)
  Global<const T> dout;  // (N, FC)
  size_t n;              // N FC
  int FC;
  SIMT_DEVICE void operator()(Thread& t) const {
    for (size_t i = global_index(t); i < n; i += grid_stride(t)) {
      const size_t gate = i / FC * 2 * FC + i % FC;
      const float g = simt::to_float(inp[gate]), u = simt::to_float(inp[gate + FC]), d = simt::to_float(dout[i]);
      const float sigmoid = 1.f / (1.f + simt::expf_(-g));
      dinp[gate + FC] = simt::from_float<T>(d * g * sigmoid);
      dinp[gate] = simt::from_float<T>(d * u * sigmoid * (1.f + g * (1.f - sigmoid)));
    }
  }
};

template <class E>
struct RotaryKernel {
  static constexpr const char* kName = simt::named<E>("rotary", "rotary_bf16", "rotary_fp16");
  Global<E> qkv;                // (B, T, (NH + 2 NKV) hs) in place
  Global<const float> inv_freq; // (hs / 2)
  size_t pairs;                 // B T (NH + NKV) hs / 2
  int T, T0;
  AttentionHeads heads;
  float sign;                   // 1 forward, -1 the transpose
  SIMT_DEVICE void operator()(Thread& th) const {
    const int half = heads.hs / 2, rotated = heads.NH + heads.NKV;  // q's heads, then k's, lie first
    for (size_t p = global_index(th); p < pairs; p += grid_stride(th)) {
      const int i = static_cast<int>(p % half);
      const size_t head = p / half % rotated, row = p / half / rotated;
      const float angle = static_cast<float>(T0 + static_cast<int>(row % T)) * inv_freq[i];
      const float c = simt::cosf_(angle), s = sign * simt::sinf_(angle);
      const Global<E> x = qkv + row * heads.qkv_row() + head * heads.hs;
      const float x1 = simt::to_float(x[i]), x2 = simt::to_float(x[i + half]);
      x[i] = simt::from_float<E>(x1 * c - x2 * s);
      x[i + half] = simt::from_float<E>(x2 * c + x1 * s);
    }
  }
};

template <class Launch, class T>
void swiglu_forward(Launch& launch, T* out, const T* inp, int N, int FC) {
  const size_t n = static_cast<size_t>(N) * FC;
  if (n > 0) launch.kernel(SwiGluForwardKernel<T>{out, inp, n, FC}, elementwise_shape(n));
}

template <class Launch, class T>
void swiglu_backward(Launch& launch, T* dinp, const T* inp, const T* dout, int N, int FC) {
  const size_t n = static_cast<size_t>(N) * FC;
  if (n > 0) launch.kernel(SwiGluBackwardKernel<T>{dinp, inp, dout, n, FC}, elementwise_shape(n));
}

template <class Launch, class E>
void rotary(Launch& launch, E* qkv, const float* inv_freq, int B, int T, int T0, AttentionHeads heads, float sign) {
  const size_t pairs = static_cast<size_t>(B) * T * (heads.NH + heads.NKV) * (heads.hs / 2);
  if (pairs > 0) launch.kernel(RotaryKernel<E>{qkv, inv_freq, pairs, T, T0, heads, sign}, elementwise_shape(pairs));
}

}  // namespace eth::kernels::gpu_ops

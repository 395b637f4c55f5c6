// LayerNorm over the C channels of each row, eps 1e-5. One warp per row; row statistics are
// accumulated in double like the CPU twin (the kernels are memory-bound, so it costs nothing),
// with the variance in two passes. dweight and dbias go through the deterministic column sums.
#pragma once

#include "kernels/gpu_ops/column_sums.hpp"
#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {

constexpr int kLayerNormRowsPerBlock = 8;  // warps per block, one row each
constexpr double kLayerNormEps = 1e-5;

// The row warp w of block b owns: 8 b + w.
SIMT_DEVICE int layernorm_row(Thread& t) {
  return static_cast<int>(t.block_idx().x) * kLayerNormRowsPerBlock + t.warp();
}

// Row n of a layernorm forward, by its warp: x (C values) normalised into o, from the lane's
// partial sum of x (its columns lane, lane + 32, ...), which the warp adds by butterfly; the
// variance in a second pass; lane 0 writes mean and rstd. Every layernorm forward ends here, so
// fused with the residual add (layernorm_bf16.hpp) or not, a row's output has the same bits.
template <class E>
SIMT_DEVICE void normalise_row(Thread& t, double lane_sum, Global<const E> x, Global<E> o, Global<const E> weight,
                               Global<const E> bias, Global<float> mean, Global<float> rstd, int n, int C) {
  const int lane = t.lane();
  const double m = warp_sum(t, lane_sum) / C;
  double var = 0.0;
  for (int c = lane; c < C; c += kWarp) {
    const double d = simt::to_float(x[c]) - m;
    var += d * d;
  }
  const double s = 1.0 / simt::sqrt_(warp_sum(t, var) / C + kLayerNormEps);
  for (int c = lane; c < C; c += kWarp) {
    const float xc = simt::to_float(x[c]);
    o[c] = simt::from_float<E>(static_cast<float>((xc - m) * s) * simt::to_float(weight[c]) + simt::to_float(bias[c]));
  }
  if (lane == 0) {
    mean[n] = static_cast<float>(m);
    rstd[n] = static_cast<float>(s);
  }
}

// Block b, 8 warps: warp w owns row n = 8 b + w (warps past N return whole); lane l owns the
// columns l, l + 32, ... of it. out, inp, weight and bias of element type E (float, or bf16
// activations and parameter copies).
template <class E>
struct LayerNormForwardKernel {
  static constexpr const char* kName =
      simt::named<E>("layernorm_forward", "layernorm_forward_bf16", "layernorm_forward_fp16");
  Global<E> out;                 // (N, C)
  Global<float> mean, rstd;      // (N)
  Global<const E> inp;           // (N, C)
  Global<const E> weight;        // (C)
  Global<const E> bias;          // (C)
  int N, C;

  SIMT_DEVICE void operator()(Thread& t) const {
    const int n = layernorm_row(t);
    if (n >= N) return;
    const size_t row = static_cast<size_t>(n) * C;
    const Global<const E> x = inp + row;
    double sum = 0.0;
    for (int c = t.lane(); c < C; c += kWarp) sum += simt::to_float(x[c]);
    normalise_row<E>(t, sum, x, out + row, weight, bias, mean, rstd, n, C);
  }
};

// dinp += (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) * rstd, with dnorm = weight * dout.
// The same ownership as the forward kernel: warp w of block b owns row 8 b + w, lane l its
// columns l, l + 32, ...
struct LayerNormBackwardKernel {
  static constexpr const char* kName = "layernorm_backward";
  Global<float> dinp;                   // (N, C) accumulated
  Global<const float> dout;             // (N, C)
  Global<const float> inp;              // (N, C)
  Global<const float> weight;           // (C)
  Global<const float> mean, rstd;       // (N)
  int N, C;

  SIMT_DEVICE void operator()(Thread& t) const {
    const int lane = t.lane(), n = layernorm_row(t);
    if (n >= N) return;
    const Global<const float> x = inp + static_cast<size_t>(n) * C;
    const Global<const float> d = dout + static_cast<size_t>(n) * C;
    const float m = mean[n];
    const double s = rstd[n];
    double dnorm_mean = 0.0, dnorm_norm_mean = 0.0;
    for (int c = lane; c < C; c += kWarp) {
      const float xc = x[c];
      const double norm = (xc - m) * s;  // x - mean in float, as in the CPU twin
      const double dnorm = static_cast<double>(weight[c]) * d[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean = warp_sum(t, dnorm_mean) / C;
    dnorm_norm_mean = warp_sum(t, dnorm_norm_mean) / C;
    const Global<float> dx = dinp + static_cast<size_t>(n) * C;
    for (int c = lane; c < C; c += kWarp) {
      const float xc = x[c];
      const double norm = (xc - m) * s;
      const double dnorm = static_cast<double>(weight[c]) * d[c];
      dx[c] += static_cast<float>((dnorm - dnorm_mean - norm * dnorm_norm_mean) * s);
    }
  }
};

// The two per-row terms of dweight and dbias: (norm * dout, dout) at (n, c).
struct LayerNormParamTerm {
  static constexpr const char* kName = "layernorm_backward_param_partials";
  Global<const float> dout;        // (N, C)
  Global<const float> inp;         // (N, C)
  Global<const float> mean, rstd;  // (N)
  int C;

  SIMT_DEVICE Float2 operator()(size_t n, int c) const {
    const size_t i = n * C + c;
    const float x = inp[i], m = mean[n], s = rstd[n], g = dout[i];
    return Float2{(x - m) * s * g, g};
  }
};

inline LaunchShape layernorm_shape(int N) {
  return {Dim3(static_cast<unsigned>(ceil_div(static_cast<size_t>(N), kLayerNormRowsPerBlock))),
          Dim3(kLayerNormRowsPerBlock * kWarp), 0};
}

template <class Launch, class E>
void layernorm_forward(Launch& launch, E* out, float* mean, float* rstd, const E* inp, const E* weight,
                       const E* bias, int N, int C) {
  if (N == 0) return;
  launch.kernel(LayerNormForwardKernel<E>{out, mean, rstd, inp, weight, bias, N, C}, layernorm_shape(N));
}

template <class Launch>
void layernorm_backward(Launch& launch, float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd, int N, int C) {
  if (N == 0 || C == 0) return;
  launch.kernel(LayerNormBackwardKernel{dinp, dout, inp, weight, mean, rstd, N, C}, layernorm_shape(N));
  add_column_sums(launch, dweight, dbias, LayerNormParamTerm{dout, inp, mean, rstd, C}, N, C);
}

}  // namespace eth::kernels::gpu_ops

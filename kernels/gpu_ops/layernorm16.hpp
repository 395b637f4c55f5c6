// LayerNorm on the 16-bit paths (E = bf16 or fp16), eps 1e-5: the forward fused with the residual
// add before it, and the backward (layernorm.hpp's, on E); RMSNorm's forward fused the same way.
// Activations and parameter copies are E in memory; the forward's row statistics are summed in
// double (layernorm.hpp). The roundings are the twin's: the residual is stored in E and normalised
// as stored; out and dinp are stored in E; mean, rstd, dweight and dbias stay fp32.
#pragma once

#include <stdexcept>

#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/layernorm.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {

using simt::from_float;
using simt::to_float;

// Block b, 8 warps: warp w owns row n = 8 b + w (warps past N return whole); lane l owns the
// columns l, l + 32, ... of it. The first pass adds, stores the rounded residual and (layernorm)
// sums it; normalise_row (layernorm.hpp) reads the stored residual back (this thread's own writes,
// from L1/L2) as the norm's forward reads its input: the same bits as the two ops apart. kCentred
// false is RMSNorm (no mean, no bias, the model's eps), as rmsnorm_forward's rows.
template <class E, bool kCentred>
struct FusedResidualNormForwardKernel {
  static constexpr const char* kName =
      kCentred ? simt::named<E>("", "fused_residual_layernorm_forward_bf16", "fused_residual_layernorm_forward_fp16")
               : simt::named<E>("", "fused_residual_rmsnorm_forward_bf16", "fused_residual_rmsnorm_forward_fp16");
  Global<E> residual;             // (N, C) = a + b
  Global<E> out;                  // (N, C)
  Global<float> mean, rstd;       // (N); mean layernorm only
  Global<const E> a, b;           // (N, C)
  Global<const E> weight;         // (C)
  Global<const E> bias;           // (C), layernorm only
  int N, C;
  double eps;

  SIMT_DEVICE void operator()(Thread& t) const {
    const int n = layernorm_row(t);
    if (n >= N) return;
    const size_t row = static_cast<size_t>(n) * C;
    const Global<E> r = residual + row;
    simt::f64 sum = 0.0;
    for (int c = t.lane(); c < C; c += kWarp) {
      const E x = from_float<E>(to_float(a[row + c]) + to_float(b[row + c]));
      r[c] = x;
      if (kCentred) sum += to_float(x);
    }
    normalise_row<E, kCentred>(t, sum, r, out + row, weight, bias, mean, rstd, n, C, eps);
  }
};

template <class Launch, class E>
void fused_residual_layernorm_forward16(Launch& launch, E* residual, E* out, float* mean, float* rstd, const E* a,
                                        const E* b, const E* weight, const E* bias, int N, int C) {
  if (N == 0) return;
  launch.kernel(FusedResidualNormForwardKernel<E, true>{residual, out, mean, rstd, a, b, weight, bias, N, C,
                                                        kLayerNormEps},
                layernorm_shape(N));
}

template <class Launch, class E>
void fused_residual_rmsnorm_forward16(Launch& launch, E* residual, E* out, float* rstd, const E* a, const E* b,
                                      const E* weight, int N, int C, float eps) {
  if (N == 0) return;
  launch.kernel(FusedResidualNormForwardKernel<E, false>{residual, out, nullptr, rstd, a, b, weight, nullptr, N, C, eps},
                layernorm_shape(N));
}

template <class Launch, class E>
void layernorm_backward16(Launch& launch, E* dinp, float* dweight, float* dbias, const E* dout, const E* inp,
                          const E* weight, const float* mean, const float* rstd, int N, int C) {
  layernorm_backward_of(launch, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

}  // namespace eth::kernels::gpu_ops

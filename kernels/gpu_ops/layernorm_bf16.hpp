// LayerNorm on the 16-bit paths (E = bf16 or fp16), eps 1e-5: the forward fused with the residual
// add before it, and the backward in one launch. Activations and parameter copies are E in
// memory; every sum is fp32 or, for a row's statistics, double as in layernorm.hpp and the CPU
// twin. The roundings are the twin's: the residual is stored in E and normalised as stored; out
// and dinp are stored in E; mean, rstd, dweight and dbias stay fp32.
#pragma once

#include <stdexcept>

#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/last_block.hpp"
#include "kernels/gpu_ops/layernorm.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {

using simt::from_float;
using simt::to_float;

constexpr int kLayerNormBackwardThreads = kLayerNormRowsPerBlock * kWarp;

// Block b, 8 warps: warp w owns row n = 8 b + w (warps past N return whole); lane l owns the
// columns l, l + 32, ... of it. The first pass adds, stores the rounded residual and sums it;
// normalise_row (layernorm.hpp) reads the stored residual back (this thread's own writes, from
// L1/L2) as layernorm_forward reads its input: the same bits as the two ops apart.
template <class E>
struct FusedResidualLayerNormForwardKernel {
  static constexpr const char* kName =
      simt::named<E>("", "fused_residual_layernorm_forward_bf16", "fused_residual_layernorm_forward_fp16");
  Global<E> residual;             // (N, C) = a + b
  Global<E> out;                  // (N, C)
  Global<float> mean, rstd;       // (N)
  Global<const E> a, b;           // (N, C)
  Global<const E> weight;         // (C)
  Global<const E> bias;           // (C)
  int N, C;

  SIMT_DEVICE void operator()(Thread& t) const {
    const int n = layernorm_row(t);
    if (n >= N) return;
    const size_t row = static_cast<size_t>(n) * C;
    const Global<E> r = residual + row;
    double sum = 0.0;
    for (int c = t.lane(); c < C; c += kWarp) {
      const E x = from_float<E>(to_float(a[row + c]) + to_float(b[row + c]));
      r[c] = x;
      sum += to_float(x);
    }
    normalise_row<E>(t, sum, r, out + row, weight, bias, mean, rstd, n, C);
  }
};

// Block b owns rows [32 b, 32 b + 32). Phase 1, dinp: warp w takes rows 32 b + w, + 8, ...; lane
// l its columns l, l + 32, ...: dinp += (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) * rstd
// with dnorm = weight * dout, read in E, added in fp32, stored in E. Phase 2, the block's share
// of dweight and dbias: thread i owns columns i, i + 256, ... and adds the block's rows in order
// into partials[b]. Phase 3, in the block that finishes last only: thread i adds every block's
// partials of its columns in block order into dweight and dbias. The grid depends on N alone,
// so the sums' order, and their bits, never depend on the device or on scheduling.
template <class E>
struct LayerNormBackward16Kernel {
  static constexpr const char* kName = simt::named<E>("", "layernorm_backward_bf16", "layernorm_backward_fp16");
  Global<E> dinp;                  // (N, C) accumulated
  Global<float> dweight, dbias;    // (C) accumulated
  Global<Float2> partials;         // (blocks, C) scratch: (dweight, dbias) of each block's rows
  Global<unsigned> counter;        // (1) zero on entry and on exit
  Global<const E> dout;            // (N, C)
  Global<const E> inp;             // (N, C)
  Global<const E> weight;          // (C)
  Global<const float> mean, rstd;  // (N)
  int N, C;

  SIMT_DEVICE void operator()(Thread& t) const {
    LastBlockSmem& smem = t.shared<LastBlockSmem>();
    const int block = static_cast<int>(t.block_idx().x);
    const int begin = block * kLayerNormBackwardRowsPerBlock;
    const int end = simt::imin(N, begin + kLayerNormBackwardRowsPerBlock);
    for (int n = begin + t.warp(); n < end; n += kLayerNormRowsPerBlock) dinp_row(t, n);

    const int first = static_cast<int>(t.thread_idx().x), stride = static_cast<int>(t.block_dim().x);
    for (int c = first; c < C; c += stride) {
      Float2 sum{0.f, 0.f};
      for (int n = begin; n < end; n++) {
        const size_t i = static_cast<size_t>(n) * C + c;
        const float g = to_float(dout[i]);
        sum.x += (to_float(inp[i]) - mean[n]) * rstd[n] * g;  // norm * dout, as the CPU twin
        sum.y += g;
      }
      partials[static_cast<size_t>(block) * C + c] = sum;
    }
    if (!finished_last(t, counter, smem)) return;

    const int blocks = static_cast<int>(t.grid_dim().x);
    for (int c = first; c < C; c += stride) {
      const Float2 sum = sum_of_partials(partials, blocks, C, c);
      dweight[c] += sum.x;
      dbias[c] += sum.y;
    }
  }

  SIMT_DEVICE void dinp_row(Thread& t, int n) const {
    const int lane = t.lane();
    const size_t row = static_cast<size_t>(n) * C;
    const float m = mean[n];
    const double s = rstd[n];
    double dnorm_mean = 0.0, dnorm_norm_mean = 0.0;
    for (int c = lane; c < C; c += kWarp) {
      const double norm = (to_float(inp[row + c]) - m) * s;  // x - mean in float, as the CPU twin
      const double dnorm = static_cast<double>(to_float(weight[c])) * to_float(dout[row + c]);
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean = warp_sum(t, dnorm_mean) / C;
    dnorm_norm_mean = warp_sum(t, dnorm_norm_mean) / C;
    for (int c = lane; c < C; c += kWarp) {
      const double norm = (to_float(inp[row + c]) - m) * s;
      const double dnorm = static_cast<double>(to_float(weight[c])) * to_float(dout[row + c]);
      const float dx = static_cast<float>((dnorm - dnorm_mean - norm * dnorm_norm_mean) * s);
      dinp[row + c] = from_float<E>(to_float(dinp[row + c]) + dx);
    }
  }
};

template <class Launch, class E>
void fused_residual_layernorm_forward16(Launch& launch, E* residual, E* out, float* mean, float* rstd, const E* a,
                                        const E* b, const E* weight, const E* bias, int N, int C) {
  if (N == 0) return;
  launch.kernel(FusedResidualLayerNormForwardKernel<E>{residual, out, mean, rstd, a, b, weight, bias, N, C},
                layernorm_shape(N));
}

template <class Launch, class E>
void layernorm_backward16(Launch& launch, E* dinp, float* dweight, float* dbias, const E* dout, const E* inp,
                          const E* weight, const float* mean, const float* rstd, int N, int C) {
  if (N == 0 || C == 0) return;
  const size_t blocks = ceil_div(static_cast<size_t>(N), kLayerNormBackwardRowsPerBlock);
  auto* partials =
      static_cast<Float2*>(launch.scratch(layernorm_backward_bf16_scratch_bytes(static_cast<size_t>(N), C)));
  launch.kernel(LayerNormBackward16Kernel<E>{dinp, dweight, dbias, partials, launch.counters(1), dout, inp, weight,
                                             mean, rstd, N, C},
                LaunchShape{Dim3(static_cast<unsigned>(blocks)), Dim3(kLayerNormBackwardThreads),
                            sizeof(LastBlockSmem)});
}

}  // namespace eth::kernels::gpu_ops

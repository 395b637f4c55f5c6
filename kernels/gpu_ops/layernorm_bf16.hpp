// LayerNorm on the 16-bit paths (E = bf16 or fp16), eps 1e-5: the forward fused with the residual
// add before it, and the backward in one launch. Activations and parameter copies are E in
// memory; every sum is fp32 or, for a row's statistics, double as in layernorm.hpp and the CPU
// twin. The roundings are the twin's: the residual is stored in E and normalised as stored; out
// and dinp are stored in E; mean, rstd, dweight and dbias stay fp32. The backward computes in
// fp32 alone.
#pragma once

#include <stdexcept>

#include "kernels/gpu_ops/common.hpp"
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

// Block b owns rows [32 b, 32 b + 32), read in pieces of W values (16 bytes at W = 8). Phase 1,
// dinp: warp w takes rows 32 b + w, + 8, ...; lane l its pieces l, l + 32, ...:
// dinp += (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) * rstd, dnorm = weight * dout and
// norm = (x - mean) rstd, all in fp32 (no FP64: the consumer cards of a mixed cluster run it at
// 1/64 rate), read in E, stored in E. The row is read twice, the second time for the update,
// from the cache the first read filled. Phase 2, the block's share of dweight and dbias: thread
// i owns pieces i, i + 256, ... of the columns and adds the block's rows in order into
// partials[b] (the rows again from the cache, where phase 1 left them). The partials are added by
// the column sums (column_sums.hpp) in a second launch, many blocks at once; the grid depends on N
// alone, so the order of every sum, and the bits, never depend on the device or on scheduling.
template <class E, int W>
struct LayerNormBackward16Kernel {
  static constexpr const char* kName = simt::named<E>("", "layernorm_backward_bf16", "layernorm_backward_fp16");
  using Piece = Packed<E, W>;
  Global<Piece> dinp;              // (N, C / W) accumulated
  Global<Float2> partials;         // (blocks, C): (dweight, dbias) of each block's rows
  Global<const Piece> dout;        // (N, C / W)
  Global<const Piece> inp;         // (N, C / W)
  Global<const Piece> weight;      // (C / W)
  Global<const float> mean, rstd;  // (N)
  int N, C;

  SIMT_DEVICE void operator()(Thread& t) const {
    const int block = static_cast<int>(t.block_idx().x), pieces = C / W;
    const int begin = block * kLayerNormBackwardRowsPerBlock;
    const int end = simt::imin(N, begin + kLayerNormBackwardRowsPerBlock);
    for (int n = begin + t.warp(); n < end; n += kLayerNormRowsPerBlock) dinp_row(t, n);

    for (int p = static_cast<int>(t.thread_idx().x); p < pieces; p += static_cast<int>(t.block_dim().x)) {
      Float2 sum[W] = {};
      for (int n = begin; n < end; n++) {
        const size_t i = static_cast<size_t>(n) * pieces + p;
        const Piece x = inp[i], g = dout[i];
        const float m = mean[n], s = rstd[n];
        SIMT_UNROLL
        for (int k = 0; k < W; k++) {
          const float gk = to_float(g.h[k]);
          sum[k].x += (to_float(x.h[k]) - m) * s * gk;  // norm * dout, as the CPU twin
          sum[k].y += gk;
        }
      }
      SIMT_UNROLL
      for (int k = 0; k < W; k++) partials[static_cast<size_t>(block) * C + static_cast<size_t>(p) * W + k] = sum[k];
    }
  }

  SIMT_DEVICE void dinp_row(Thread& t, int n) const {
    const int pieces = C / W;
    const size_t row = static_cast<size_t>(n) * pieces;
    const float m = mean[n], s = rstd[n];
    float dnorm_sum = 0.f, dnorm_norm_sum = 0.f;
    for (int p = t.lane(); p < pieces; p += kWarp) {
      const Piece x = inp[row + p], g = dout[row + p], w = weight[p];
      SIMT_UNROLL
      for (int k = 0; k < W; k++) {
        const float dnorm = to_float(w.h[k]) * to_float(g.h[k]);  // exact: two 16-bit values
        dnorm_sum += dnorm;
        dnorm_norm_sum += dnorm * ((to_float(x.h[k]) - m) * s);
      }
    }
    const float dnorm_mean = warp_sum(t, dnorm_sum) / C, dnorm_norm_mean = warp_sum(t, dnorm_norm_sum) / C;
    for (int p = t.lane(); p < pieces; p += kWarp) {
      const Piece x = inp[row + p], g = dout[row + p], w = weight[p];
      Piece d = dinp[row + p];
      SIMT_UNROLL
      for (int k = 0; k < W; k++) {
        const float dnorm = to_float(w.h[k]) * to_float(g.h[k]);
        const float norm = (to_float(x.h[k]) - m) * s;
        d.h[k] = from_float<E>(to_float(d.h[k]) + (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s);
      }
      dinp[row + p] = d;
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

namespace layernorm16 {
// The rows' kernel on pieces of W values.
template <int W, class Launch, class E>
void backward_rows(Launch& launch, int blocks, E* dinp, Float2* partials, const E* dout, const E* inp, const E* weight,
                   const float* mean, const float* rstd, int N, int C) {
  using Piece = Packed<E, W>;
  launch.kernel(LayerNormBackward16Kernel<E, W>{reinterpret_cast<Piece*>(dinp), partials,
                                                reinterpret_cast<const Piece*>(dout),
                                                reinterpret_cast<const Piece*>(inp),
                                                reinterpret_cast<const Piece*>(weight), mean, rstd, N, C},
                LaunchShape{Dim3(static_cast<unsigned>(blocks)), Dim3(kLayerNormBackwardThreads), 0});
}
}  // namespace layernorm16

// 16-byte pieces where every row starts on 16 bytes (C a multiple of 8, the tensors aligned), the
// values one by one otherwise.
template <class Launch, class E>
void layernorm_backward16(Launch& launch, E* dinp, float* dweight, float* dbias, const E* dout, const E* inp,
                          const E* weight, const float* mean, const float* rstd, int N, int C) {
  if (N == 0 || C == 0) return;
  const int blocks = static_cast<int>(ceil_div(static_cast<size_t>(N), kLayerNormBackwardRowsPerBlock));
  const LayerNormBackward16Scratch at(static_cast<size_t>(N), static_cast<size_t>(C));
  auto* scratch = static_cast<unsigned char*>(launch.scratch(at.total));
  auto* partials = reinterpret_cast<Float2*>(scratch + at.block_partials);
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % sizeof(Packed<E, 8>) == 0; };
  if (C % 8 == 0 && aligned(dinp) && aligned(dout) && aligned(inp) && aligned(weight))
    layernorm16::backward_rows<8>(launch, blocks, dinp, partials, dout, inp, weight, mean, rstd, N, C);
  else
    layernorm16::backward_rows<1>(launch, blocks, dinp, partials, dout, inp, weight, mean, rstd, N, C);
  add_column_sums(launch, dweight, dbias, PartialsTerm{partials, C}, blocks, C,
                  reinterpret_cast<Float2*>(scratch + at.chunk_partials));
}

}  // namespace eth::kernels::gpu_ops

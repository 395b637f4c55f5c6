// LayerNorm over the C channels of each row, eps 1e-5, on E = float, bf16 or fp16 (activations
// and parameter copies; statistics and parameter gradients fp32). The forward, one warp per row,
// sums a row's statistics in double like the CPU twin, the variance in a second pass (its bits are
// the twin's). The backward computes in fp32 alone (no FP64: the consumer cards of a mixed cluster
// run it at 1/64 rate): a warp per row for its means, then a thread per column piece for dinp and
// each block's column partials of dweight and dbias, which the deterministic column sums then add.
#pragma once

#include "kernels/gpu_ops/column_sums.hpp"
#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {

constexpr int kLayerNormRowsPerBlock = 8;  // warps per block, one row each
constexpr double kLayerNormEps = 1e-5;
constexpr int kLayerNormBackwardThreads = kLayerNormRowsPerBlock * kWarp;

// The row warp w of block b owns: 8 b + w.
SIMT_DEVICE int layernorm_row(Thread& t) {
  return static_cast<int>(t.block_idx().x) * kLayerNormRowsPerBlock + t.warp();
}

// Row n of a layernorm forward, by its warp: x (C values) normalised into o, from the lane's
// partial sum of x (its columns lane, lane + 32, ...), which the warp adds by butterfly; the
// variance in a second pass; lane 0 writes mean and rstd. Every layernorm forward ends here, so
// fused with the residual add (layernorm16.hpp) or not, a row's output has the same bits.
// kCentred false is RMSNorm: no mean (m = 0, the "variance" the mean square), no bias, rstd alone.
template <class E, bool kCentred = true>
SIMT_DEVICE void normalise_row(Thread& t, simt::f64 lane_sum, Global<const E> x, Global<E> o, Global<const E> weight,
                               Global<const E> bias, Global<float> mean, Global<float> rstd, int n, int C,
                               double eps = kLayerNormEps) {
  const int lane = t.lane();
  const simt::f64 m = kCentred ? warp_sum(t, lane_sum) / C : simt::f64(0.0);
  simt::f64 var = 0.0;
  for (int c = lane; c < C; c += kWarp) {
    const simt::f64 d = simt::to_float(x[c]) - m;
    var += d * d;
  }
  const simt::f64 s = 1.0 / simt::sqrt_(warp_sum(t, var) / C + eps);
  for (int c = lane; c < C; c += kWarp) {
    const float xc = simt::to_float(x[c]);
    const float scaled = static_cast<float>((xc - m) * s) * simt::to_float(weight[c]);
    o[c] = simt::from_float<E>(kCentred ? scaled + simt::to_float(bias[c]) : scaled);
  }
  if (lane == 0) {
    if (kCentred) mean[n] = static_cast<float>(m);
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
    simt::f64 sum = 0.0;
    for (int c = t.lane(); c < C; c += kWarp) sum += simt::to_float(x[c]);
    normalise_row<E>(t, sum, x, out + row, weight, bias, mean, rstd, n, C);
  }
};

// RMSNorm (transformers' LlamaRMSNorm): LayerNormForwardKernel's rows without the mean or bias.
template <class E>
struct RmsNormForwardKernel {
  static constexpr const char* kName = simt::named<E>("rmsnorm_forward", "rmsnorm_forward_bf16", "rmsnorm_forward_fp16");
  Global<E> out;          // (N, C)
  Global<float> rstd;     // (N)
  Global<const E> inp;    // (N, C)
  Global<const E> weight; // (C)
  int N, C;
  double eps;

  SIMT_DEVICE void operator()(Thread& t) const {
    const int n = layernorm_row(t);
    if (n >= N) return;
    const size_t row = static_cast<size_t>(n) * C;
    normalise_row<E, false>(t, 0.0, inp + row, out + row, weight, nullptr, nullptr, rstd, n, C, eps);
  }
};

// Block b owns rows [32 b, 32 b + 32), read in pieces of W values (16 bytes: W = 16 / sizeof E).
// First the rows' mean and rstd into shared memory, one read each. Phase 1, the rows' means of
// dnorm = weight * dout and of dnorm * norm, norm = (x - mean) rstd: warp w takes rows 32 b + w,
// + 8, ...; lane l its pieces l, l + 32, ...; lane 0 puts them in shared memory. Phase 2, dinp and
// the block's share of dweight and dbias in one pass over the rows: thread i owns pieces i,
// i + 256, ... of the columns and takes the block's rows in order,
// dinp += (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) * rstd, all in fp32, read in E,
// stored in E, and adds (norm * dout, dout) into its partials, written to partials[b] with value
// k of piece p at k * C / W + p, so that a store of the lanes' k-th values is contiguous
// (PartialsTerm reads them back by column). Phase 2 reads the rows again, from the cache phase 1
// filled. The partials are added by the column sums (column_sums.hpp) in a second launch, many
// blocks at once; the grid depends on N alone, so the order of every sum, and the bits, never
// depend on the device or on scheduling. kCentred false is RMSNorm's backward: norm = x rstd,
// dinp += (dnorm - norm * mean(dnorm * norm)) * rstd, the partials' dbias halves unused (no mean
// is read).
template <class E, int W, bool kCentred = true>
struct LayerNormBackwardKernel {
  static constexpr const char* kName =
      kCentred ? simt::named<E>("layernorm_backward", "layernorm_backward_bf16", "layernorm_backward_fp16")
               : simt::named<E>("rmsnorm_backward", "rmsnorm_backward_bf16", "rmsnorm_backward_fp16");
  using Piece = Packed<E, W>;
  Global<Piece> dinp;              // (N, C / W) accumulated
  Global<Float2> partials;         // (blocks, W, C / W): (dweight, dbias) of each block's rows
  Global<const Piece> dout;        // (N, C / W)
  Global<const Piece> inp;         // (N, C / W)
  Global<const Piece> weight;      // (C / W)
  Global<const float> mean, rstd;  // (N)
  int N, C;

  // Row begin + r of the block in entry r.
  struct Smem {
    simt::SharedArray<float, kLayerNormBackwardRowsPerBlock> mean, rstd;
    simt::SharedArray<Float2, kLayerNormBackwardRowsPerBlock> dnorm_means;  // (mean(dnorm), mean(dnorm norm))
  };

  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const int block = static_cast<int>(t.block_idx().x), pieces = C / W;
    const int first = static_cast<int>(t.thread_idx().x), stride = static_cast<int>(t.block_dim().x);
    const int begin = block * kLayerNormBackwardRowsPerBlock;
    const int end = simt::imin(N, begin + kLayerNormBackwardRowsPerBlock);
    if (first < end - begin) {
      s.mean(first) = kCentred ? mean[begin + first] : 0.f;
      s.rstd(first) = rstd[begin + first];
    }
    t.sync();
    for (int n = begin + t.warp(); n < end; n += kLayerNormRowsPerBlock) dnorm_means(t, s, n - begin, n);
    t.sync();

    for (int p = first; p < pieces; p += stride) {
      const Piece w = weight[p];
      Float2 sum[W] = {};
      for (int n = begin; n < end; n++) {
        const float m = s.mean(n - begin), sn = s.rstd(n - begin);
        const Float2 means = s.dnorm_means(n - begin);
        // RMSNorm's mean(dnorm) the constant 0, so that the compiler contracts the update as it did
        // when phase 1 computed dinp (fp32's bits)
        const float dnorm_mean = kCentred ? means.x : 0.f;
        const size_t i = static_cast<size_t>(n) * pieces + p;
        const Piece x = inp[i], g = dout[i];
        Piece d = dinp[i];
        SIMT_UNROLL
        for (int k = 0; k < W; k++) {
          const float gk = simt::to_float(g.h[k]);
          const float dnorm = simt::to_float(w.h[k]) * gk;  // exact for two 16-bit values
          const float norm = (simt::to_float(x.h[k]) - m) * sn;
          d.h[k] = simt::from_float<E>(simt::to_float(d.h[k]) + (dnorm - dnorm_mean - norm * means.y) * sn);
          sum[k].x += norm * gk;  // norm * dout, as the CPU twin
          sum[k].y += gk;
        }
        dinp[i] = d;
      }
      SIMT_UNROLL
      for (int k = 0; k < W; k++) partials[(static_cast<size_t>(block) * W + k) * pieces + p] = sum[k];
    }
  }

  // Row n (entry r of the block's) by its warp: the means of dnorm (0 for RMSNorm) and of
  // dnorm * norm over the row, into s.dnorm_means(r).
  SIMT_DEVICE void dnorm_means(Thread& t, Smem& s, int r, int n) const {
    const int pieces = C / W;
    const size_t row = static_cast<size_t>(n) * pieces;
    const float m = s.mean(r), sn = s.rstd(r);
    float dnorm_sum = 0.f, dnorm_norm_sum = 0.f;
    for (int p = t.lane(); p < pieces; p += kWarp) {
      const Piece x = inp[row + p], g = dout[row + p], w = weight[p];
      SIMT_UNROLL
      for (int k = 0; k < W; k++) {
        const float dnorm = simt::to_float(w.h[k]) * simt::to_float(g.h[k]);
        dnorm_sum += dnorm;
        dnorm_norm_sum += dnorm * ((simt::to_float(x.h[k]) - m) * sn);
      }
    }
    const float dnorm_mean = kCentred ? warp_sum(t, dnorm_sum) / C : 0.f;
    const float dnorm_norm_mean = warp_sum(t, dnorm_norm_sum) / C;
    if (t.lane() == 0) s.dnorm_means(r) = Float2{dnorm_mean, dnorm_norm_mean};
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

template <class Launch, class E>
void rmsnorm_forward(Launch& launch, E* out, float* rstd, const E* inp, const E* weight, int N, int C, float eps) {
  if (N == 0) return;
  launch.kernel(RmsNormForwardKernel<E>{out, rstd, inp, weight, N, C, eps}, layernorm_shape(N));
}

namespace layernorm_rows {
// The rows' kernel on pieces of W values.
template <int W, bool kCentred, class Launch, class E>
void backward_rows(Launch& launch, int blocks, E* dinp, Float2* partials, const E* dout, const E* inp, const E* weight,
                   const float* mean, const float* rstd, int N, int C) {
  using Piece = Packed<E, W>;
  launch.kernel(LayerNormBackwardKernel<E, W, kCentred>{reinterpret_cast<Piece*>(dinp), partials,
                                                reinterpret_cast<const Piece*>(dout),
                                                reinterpret_cast<const Piece*>(inp),
                                                reinterpret_cast<const Piece*>(weight), mean, rstd, N, C},
                LaunchShape{Dim3(static_cast<unsigned>(blocks)), Dim3(kLayerNormBackwardThreads),
                            sizeof(typename LayerNormBackwardKernel<E, W, kCentred>::Smem)});
}
}  // namespace layernorm_rows

// The backward on E (float, bf16 or fp16): 16-byte pieces where every row starts on 16 bytes (C a
// multiple of 16 / sizeof E, the tensors aligned), the values one by one otherwise. kCentred
// false: RMSNorm's (mean and dbias null).
template <class Launch, class E, bool kCentred = true>
void layernorm_backward_of(Launch& launch, E* dinp, float* dweight, float* dbias, const E* dout, const E* inp,
                           const E* weight, const float* mean, const float* rstd, int N, int C) {
  if (N == 0 || C == 0) return;
  const int blocks = static_cast<int>(ceil_div(static_cast<size_t>(N), kLayerNormBackwardRowsPerBlock));
  constexpr int kWide = 16 / sizeof(E);
  const LayerNormBackwardScratch at(static_cast<size_t>(N), static_cast<size_t>(C));
  auto* scratch = static_cast<unsigned char*>(launch.scratch(at.total));
  auto* partials = reinterpret_cast<Float2*>(scratch + at.block_partials);
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool wide = C % kWide == 0 && aligned(dinp) && aligned(dout) && aligned(inp) && aligned(weight);
  if (wide)
    layernorm_rows::backward_rows<kWide, kCentred>(launch, blocks, dinp, partials, dout, inp, weight, mean, rstd, N, C);
  else
    layernorm_rows::backward_rows<1, kCentred>(launch, blocks, dinp, partials, dout, inp, weight, mean, rstd, N, C);
  add_column_sums(launch, dweight, dbias, PartialsTerm{partials, C, wide ? kWide : 1}, blocks, C,
                  reinterpret_cast<Float2*>(scratch + at.chunk_partials));
}

template <class Launch>
void layernorm_backward(Launch& launch, float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd, int N, int C) {
  layernorm_backward_of(launch, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

template <class Launch, class E>
void rmsnorm_backward(Launch& launch, E* dinp, float* dweight, const E* dout, const E* inp, const E* weight,
                      const float* rstd, int N, int C) {
  layernorm_backward_of<Launch, E, false>(launch, dinp, dweight, nullptr, dout, inp, weight, nullptr, rstd, N, C);
}

}  // namespace eth::kernels::gpu_ops

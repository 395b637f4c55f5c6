// The LM head's loss on the 16-bit paths (E = bf16 or fp16), callable on any chunk of rows so
// that the head can run chunk by chunk and never hold B T Vp fp32 values: one block per row of
// logits in E reads the row once for the softmax statistics (an online max and sum in fp32, 8
// values per load), keeping it in shared memory where it fits (GPT-2's 100 KB row on sm_80 and
// sm_90), writes the token's loss, and (training) overwrites the row with
// dlogits = dlogits_scale / T * (softmax - onehot(target)) in E, zero in the padded columns: the
// numbers of crossentropy_forward_backward (crossentropy.hpp) with the logits read and dlogits
// stored in E, as the twin stores them. A second op averages each sample's token losses in order.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/ops.hpp"
#include "kernels/gpu_ops/scratch.hpp"

namespace eth::kernels::gpu_ops {

constexpr int kClassifierThreads = 512;
constexpr int kPerVector = 8;  // 16-bit values per 16-byte load or store
constexpr int kSampleMeanLossesThreads = 128;

template <class E>
using Vector8 = Packed<E, kPerVector>;

// A running softmax statistic: the max of the values seen and the sum of exp(value - max).
struct SoftmaxStat {
  float max, sum;
};

// The statistic of the union of two sets of values. Empty sets are (-inf, 0); combining two
// must not evaluate exp(-inf - -inf).
SIMT_DEVICE SoftmaxStat combine(SoftmaxStat a, SoftmaxStat b) {
  const float m = simt::fmaxf_(a.max, b.max);
  if (m == -INFINITY) return a;
  return {m, a.sum * simt::expf_(a.max - m) + b.sum * simt::expf_(b.max - m)};
}

// Block r owns row r of the chunk (Vp columns, Vp a multiple of 8); thread i its 8-column
// vectors i, i + 512, ... The statistics combine by butterfly within each warp, then every
// thread combines the 16 warps' in warp order: the same result in every thread, every run.
// With keep_row, the first pass stores each vector it reads in shared memory (after Smem) and the
// second reads it there rather than from global memory again: the row's DRAM traffic falls from
// 3 rows to 2. Each thread reads back only the vectors it stored, 16 bytes a lane in a warp's 512
// contiguous bytes (no bank conflict), so the staging needs no barrier of its own.
template <class E>
struct ClassifierRows16Kernel {
  static constexpr const char* kName = simt::named<E>("", "classifier_rows_bf16", "classifier_rows_fp16");
  Global<float> token_losses;      // (rows)
  Global<E> logits;                // (rows, Vp) overwritten with dlogits when dlogits_scale_over_T != 0
  Global<const int32_t> targets;   // (rows)
  int V, Vp;
  float dlogits_scale_over_T;
  bool keep_row;  // the launch gives shared_bytes_after<Smem, Vector8<E>>(the real vectors)

  struct Smem {
    simt::SharedArray<SoftmaxStat, kClassifierThreads / kWarp> per_warp;
  };

  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const size_t r = t.block_idx().x;
    const Global<Vector8<E>> row(reinterpret_cast<Vector8<E>*>(logits.get() + r * Vp));
    const int first = static_cast<int>(t.thread_idx().x), stride = static_cast<int>(t.block_dim().x);
    const int vectors = Vp / kPerVector, real_vectors = (V + kPerVector - 1) / kPerVector;
    // (real_vectors) with keep_row, else empty
    const simt::SharedSpan<Vector8<E>> kept = t.shared_after<Vector8<E>, Smem>(keep_row ? real_vectors : 0);

    SoftmaxStat stat{-INFINITY, 0.f};
    for (int j = first; j < real_vectors; j += stride) {
      const Vector8<E> x = row[j];
      if (keep_row) kept(j) = x;
      const int valid = V - j * kPerVector;  // columns past V (the padding) are left out
      float m = stat.max;
      SIMT_UNROLL
      for (int k = 0; k < kPerVector; k++)
        if (k < valid) m = simt::fmaxf_(m, simt::to_float(x.h[k]));
      float sum = stat.sum * simt::expf_(stat.max - m);  // 0 while stat is empty: exp(-inf)
      SIMT_UNROLL
      for (int k = 0; k < kPerVector; k++)
        if (k < valid) sum += simt::expf_(simt::to_float(x.h[k]) - m);
      stat = {m, sum};
    }
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      const SoftmaxStat other{t.shfl_xor(simt::kFullMask, stat.max, offset),
                              t.shfl_xor(simt::kFullMask, stat.sum, offset)};
      stat = combine(stat, other);
    }
    if (t.lane() == 0) s.per_warp(t.warp()) = stat;
    const int target = targets[r];
    // Read before the barrier below, after which the gradient pass overwrites the row.
    const float target_logit = first == 0 ? simt::to_float(logits[r * Vp + target]) : 0.f;
    t.sync();
    stat = s.per_warp(0);
    for (int w = 1; w < stride / kWarp; w++) stat = combine(stat, s.per_warp(w));
    if (first == 0) token_losses[r] = simt::logf_(stat.sum) - (target_logit - stat.max);
    if (dlogits_scale_over_T == 0.f) return;

    const float g = dlogits_scale_over_T;
    const float inv_sum = 1.f / stat.sum;
    for (int j = first; j < vectors; j += stride) {
      Vector8<E> x{};
      if (j < real_vectors) x = keep_row ? Vector8<E>(kept(j)) : Vector8<E>(row[j]);
      Vector8<E> d;
      SIMT_UNROLL
      for (int k = 0; k < kPerVector; k++) {
        const int v = j * kPerVector + k;
        float dv = 0.f;
        if (v < V) {
          dv = g * simt::expf_(simt::to_float(x.h[k]) - stat.max) * inv_sum;
          if (v == target) dv -= g;
        }
        d.h[k] = simt::from_float<E>(dv);
      }
      row[j] = d;
    }
  }
};

// sample_losses[b] = mean over t of token_losses[b, t], summed in t order in double (simt::f64:
// T additions and a division a thread, which the counters see); one thread per b.
struct SampleMeanLossesKernel {
  static constexpr const char* kName = "sample_mean_losses";
  Global<float> sample_losses;        // (B)
  Global<const float> token_losses;   // (B, T)
  int B, T;

  SIMT_DEVICE void operator()(Thread& t) const {
    const int b = static_cast<int>(global_index(t));
    if (b >= B) return;
    simt::f64 s = 0.0;
    for (int i = 0; i < T; i++) s += static_cast<double>(token_losses[static_cast<size_t>(b) * T + i]);
    sample_losses[b] = static_cast<float>(s / T);
  }
};

template <class Launch, class E>
void classifier_rows16(Launch& launch, float* token_losses, E* logits, const int32_t* targets, int rows, int V, int Vp,
                       float dlogits_scale_over_T) {
  using Kernel = ClassifierRows16Kernel<E>;
  if (rows == 0) return;
  if (Vp % kPerVector != 0 || reinterpret_cast<uintptr_t>(logits) % sizeof(Vector8<E>) != 0)
    throw std::invalid_argument(std::string(Kernel::kName) +
                                ": Vp must be a multiple of 8 and the logits 16-byte aligned");
  // Only training reads the row twice; the real vectors alone are kept (the padding is never read).
  const size_t kept_bytes =
      simt::shared_bytes_after<typename Kernel::Smem, Vector8<E>>((V + kPerVector - 1) / kPerVector);
  const bool keep_row = dlogits_scale_over_T != 0.f && kept_bytes <= launch.max_shared_bytes();
  launch.kernel(Kernel{token_losses, logits, targets, V, Vp, dlogits_scale_over_T, keep_row},
                LaunchShape{Dim3(static_cast<unsigned>(rows)), Dim3(kClassifierThreads),
                            keep_row ? kept_bytes : sizeof(typename Kernel::Smem)});
}

template <class Launch>
void sample_mean_losses(Launch& launch, float* sample_losses, const float* token_losses, int B, int T) {
  if (B == 0) return;
  launch.kernel(SampleMeanLossesKernel{sample_losses, token_losses, B, T},
                LaunchShape{Dim3(grid_for(static_cast<size_t>(B), kSampleMeanLossesThreads)),
                            Dim3(kSampleMeanLossesThreads), 0});
}

// The token losses in the launch's scratch (the fp32 op's, crossentropy_scratch_bytes, holds them),
// then each sample's mean.
template <class Launch, class E>
void crossentropy_forward_backward16(Launch& launch, float* sample_losses, E* logits, const int32_t* targets, int B,
                                     int T, int V, int Vp, float dlogits_scale) {
  const size_t N = static_cast<size_t>(B) * T;
  if (N == 0) return;
  auto* token_losses = static_cast<float*>(launch.scratch(crossentropy_scratch_bytes(N)));  // (B, T)
  classifier_rows16(launch, token_losses, logits, targets, static_cast<int>(N), V, Vp,
                    dlogits_scale / static_cast<float>(T));
  sample_mean_losses(launch, sample_losses, token_losses, B, T);
}

}  // namespace eth::kernels::gpu_ops

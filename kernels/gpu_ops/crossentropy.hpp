// Fused softmax + cross-entropy, one block per row of logits, probabilities never stored: pass 1
// finds the row's max, pass 2 sums exp(x - max) (in double, as the CPU twin), pass 3 (training
// only) overwrites the row with dlogits = scale/T * (softmax - onehot(target)), zero in the padded
// columns. A second kernel averages each sample's T token losses in order, in double.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {

constexpr int kCrossEntropyThreads = 512;
constexpr int kSampleMeanThreads = 128;

// Block n owns row n = b * T + t of the logits (Vp columns); thread i the columns i, i + 512, ...
struct CrossEntropyRowsKernel {
  static constexpr const char* kName = "crossentropy_rows";
  Global<double> token_loss;       // (B, T)
  Global<float> logits;            // (B, T, Vp) overwritten with dlogits when dlogits_scale != 0
  Global<const int32_t> targets;   // (B, T)
  int T, V, Vp;
  float dlogits_scale;

  struct Smem {
    BlockReduceSmem<float> max;
    BlockReduceSmem<double> sum;
  };

  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const size_t n = t.block_idx().x;
    const Global<float> row = logits + n * Vp;
    const int target = targets[n];
    const int first = static_cast<int>(t.thread_idx().x), stride = static_cast<int>(t.block_dim().x);

    float maxval = -INFINITY;
    for (int v = first; v < V; v += stride) maxval = simt::fmaxf_(maxval, row[v]);
    maxval = block_max(t, maxval, s.max);
    double sum = 0.0;
    for (int v = first; v < V; v += stride) {
      const float x = row[v];
      sum += simt::expf_(x - maxval);
    }
    sum = block_sum(t, sum, s.sum);
    // Every thread has read row[target] into the max and the sum before any thread writes (the
    // block reductions end with a barrier), so reading it here is safe.
    if (first == 0) {
      const float x = row[target];
      token_loss[n] = simt::log_(sum) - static_cast<double>(x - maxval);
    }
    if (dlogits_scale == 0.f) return;
    t.sync();  // row[target] is read above before the gradient pass overwrites it

    const float g = dlogits_scale / static_cast<float>(T);
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (int v = first; v < Vp; v += stride) {
      float d = 0.f;
      if (v < V) {
        const float x = row[v];
        d = g * simt::expf_(x - maxval) * inv_sum;
        if (v == target) d -= g;
      }
      row[v] = d;
    }
  }
};

// sample_losses[b] = mean over t of token_loss[b, t], summed in t order in double (simt::f64, as
// the classifier's sample means); one thread per b.
struct SampleMeanKernel {
  static constexpr const char* kName = "crossentropy_sample_mean";
  Global<float> sample_losses;        // (B)
  Global<const double> token_loss;    // (B, T)
  int B, T;

  SIMT_DEVICE void operator()(Thread& t) const {
    const int b = static_cast<int>(t.block_idx().x * t.block_dim().x + t.thread_idx().x);
    if (b >= B) return;
    simt::f64 s = 0.0;
    for (int i = 0; i < T; i++) s += static_cast<double>(token_loss[static_cast<size_t>(b) * T + i]);
    sample_losses[b] = static_cast<float>(s / T);
  }
};

template <class Launch>
void crossentropy_forward_backward(Launch& launch, float* sample_losses, float* logits, const int32_t* targets,
                                   int B, int T, int V, int Vp, float dlogits_scale) {
  const size_t N = static_cast<size_t>(B) * T;
  if (N == 0) return;
  auto* token_loss = static_cast<double*>(launch.scratch(crossentropy_scratch_bytes(N)));  // (B, T)
  launch.kernel(CrossEntropyRowsKernel{token_loss, logits, targets, T, V, Vp, dlogits_scale},
                LaunchShape{Dim3(static_cast<unsigned>(N)), Dim3(kCrossEntropyThreads),
                            sizeof(CrossEntropyRowsKernel::Smem)});
  launch.kernel(SampleMeanKernel{sample_losses, token_loss, B, T},
                LaunchShape{Dim3(static_cast<unsigned>(ceil_div(static_cast<size_t>(B), kSampleMeanThreads))),
                            Dim3(kSampleMeanThreads), 0});
}

}  // namespace eth::kernels::gpu_ops

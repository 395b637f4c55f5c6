// The optimizer's ops and the step's one other reduction: the sum of squares behind the global
// gradient norm, in double and deterministic (a fixed grid of partial sums, then one block adding
// them in a fixed order); the AdamW update, elementwise with the CPU twin's formula term for
// term, over a rank's whole parameter buffer in one launch (writing the bf16 copies in the same
// pass on the bf16 path); and the device-side sum of per-sample losses.
#pragma once

#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {

// Fixed, not derived from the device (kSumBlocks too, in scratch.hpp): the order of additions,
// and so the result's last bits, must not depend on which GPU runs it.
constexpr int kSumThreads = 256;
constexpr int kAdamWThreads = 256;

// Thread (b, i) owns x[256 b + i], + 1024 * 256, ...; block b's sum goes to partials[b].
struct SumOfSquaresPartialsKernel {
  static constexpr const char* kName = "sum_of_squares_partials";
  Global<double> partials;  // (kSumBlocks)
  Global<const float> x;    // (n)
  size_t n;

  SIMT_DEVICE void operator()(Thread& t) const {
    BlockReduceSmem<double>& smem = t.shared<BlockReduceSmem<double>>();
    double s = 0.0;
    for (size_t i = global_index(t); i < n; i += grid_stride(t)) {
      const double v = x[i];
      s += v * v;
    }
    s = block_sum(t, s, smem);
    if (t.thread_idx().x == 0) partials[t.block_idx().x] = s;
  }
};

// One block: thread i adds partials i, i + 256, ... and the block adds the threads' sums.
struct SumPartialsKernel {
  static constexpr const char* kName = "sum_of_squares_total";
  Global<double> result;            // (1)
  Global<const double> partials;    // (count)
  int count;

  SIMT_DEVICE void operator()(Thread& t) const {
    BlockReduceSmem<double>& smem = t.shared<BlockReduceSmem<double>>();
    double s = 0.0;
    for (int i = static_cast<int>(t.thread_idx().x); i < count; i += static_cast<int>(t.block_dim().x))
      s += partials[i];
    s = block_sum(t, s, smem);
    if (t.thread_idx().x == 0) result[0] = s;
  }
};

// One block: each thread sums a strided share in double, then the block adds the shares in a
// fixed order and thread 0 adds the result to *total.
struct AccumulateSumKernel {
  static constexpr const char* kName = "accumulate_sum";
  Global<double> total;    // (1) accumulated
  Global<const float> x;   // (n)
  size_t n;

  SIMT_DEVICE void operator()(Thread& t) const {
    BlockReduceSmem<double>& smem = t.shared<BlockReduceSmem<double>>();
    double s = 0.0;
    for (size_t i = t.thread_idx().x; i < n; i += t.block_dim().x) s += x[i];
    s = block_sum(t, s, smem);
    if (t.thread_idx().x == 0) total[0] += s;
  }
};

// One parameter's step, the CPU twin's formula term for term: updates its moments m and v and
// returns the new parameter.
SIMT_DEVICE float adamw_step(const AdamWSettings& h, float weight_decay, float p, float grad, float& m, float& v) {
  const float g = grad * h.grad_scale;
  m = h.beta1 * m + (1.f - h.beta1) * g;
  v = h.beta2 * v + (1.f - h.beta2) * g * g;
  const float m_hat = m / h.correction1;
  const float v_hat = v / h.correction2;
  return p - h.lr * (m_hat / (simt::sqrtf_(v_hat) + h.eps) + weight_decay * p);
}

// Block b updates segment b of the table (kernels/adamw_segments.hpp), its threads striding
// over the segment's floats. E = bf16 or fp16: also stores each updated parameter's copy in E, in
// the same pass (the 16-bit paths: the copies their GEMMs read); E = float: no copies. Where the
// segment starts on 16 bytes in params, grads, m and v (and on 4 values of E in the copies), the
// floats go 4 to an access (16 bytes a thread), the last size % 4 one by one; elsewhere all one by
// one. Either way each float's arithmetic is the same, so the bits are.
template <class E>
struct AdamWKernel {
  static constexpr bool kWriteCopies = !std::is_same_v<E, float>;
  static constexpr const char* kName = simt::named<E>("adamw_update", "adamw_update_bf16", "adamw_update_fp16");
  static constexpr int kWide = 4;        // floats in one 16-byte access
  Global<float> params;                  // (params' size)
  Global<E> param_copies;                // (params' size) where kWriteCopies, else null
  Global<const float> grads;             // (params' size)
  Global<float> m, v;                    // (the segments' moments)
  Global<const AdamWSegment> segments;   // (gridDim.x)
  AdamWSettings h;

  SIMT_DEVICE void operator()(Thread& t) const {
    const AdamWSegment s = segments[t.block_idx().x];
    const float weight_decay = s.decay ? h.weight_decay : 0.f;
    const uint32_t wide = wide_start(s) ? s.size / kWide * kWide : 0;  // floats [0, wide) 4 to an access
    update<kWide>(t, s, weight_decay, 0, wide);
    update<1>(t, s, weight_decay, wide, s.size);
  }

  // Whether segment s starts on a 16-byte access in every array.
  SIMT_DEVICE bool wide_start(const AdamWSegment& s) const {
    const auto on = [](const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; };
    const size_t i = s.param_offset, k = s.moment_offset;
    return on((params + i).get(), 16) && on((grads + i).get(), 16) && on((m + k).get(), 16) &&
           on((v + k).get(), 16) && (!kWriteCopies || on((param_copies + i).get(), kWide * sizeof(E)));
  }

  // Floats [begin, end) of segment s, end - begin a multiple of W, W to an access: thread i the W
  // from begin + W i, then + W blockDim, ...
  template <int W>
  SIMT_DEVICE void update(Thread& t, const AdamWSegment& s, float weight_decay, uint32_t begin, uint32_t end) const {
    using F = Packed<float, W>;
    const size_t i = s.param_offset + begin, k = s.moment_offset + begin;
    const Global<F> p = pieces<F>(params + i), mw = pieces<F>(m + k), vw = pieces<F>(v + k);
    const Global<const F> g = pieces<const F>(grads + i);
    for (uint32_t q = t.thread_idx().x; q < (end - begin) / W; q += t.block_dim().x) {
      F pq = p[q], mq = mw[q], vq = vw[q];
      const F gq = g[q];
      Packed<E, W> copy;
      SIMT_UNROLL
      for (int w = 0; w < W; w++) {
        pq.h[w] = adamw_step(h, weight_decay, pq.h[w], gq.h[w], mq.h[w], vq.h[w]);
        copy.h[w] = simt::from_float<E>(pq.h[w]);
      }
      mw[q] = mq;
      vw[q] = vq;
      p[q] = pq;
      if constexpr (kWriteCopies) pieces<Packed<E, W>>(param_copies + i)[q] = copy;
    }
  }

  // x's values from its start on, as pieces P of several of them.
  template <class P, class T>
  static SIMT_DEVICE Global<P> pieces(Global<T> x) {
    return Global<P>(reinterpret_cast<P*>(x.get()));
  }
};

template <class Launch>
double sum_of_squares(Launch& launch, const float* x, size_t n) {
  auto* partials = static_cast<double*>(launch.scratch(sum_of_squares_scratch_bytes()));  // (kSumBlocks), result
  double* result = partials + kSumBlocks;
  const size_t smem = sizeof(BlockReduceSmem<double>);
  launch.kernel(SumOfSquaresPartialsKernel{partials, x, n}, LaunchShape{Dim3(kSumBlocks), Dim3(kSumThreads), smem});
  launch.kernel(SumPartialsKernel{result, partials, kSumBlocks}, LaunchShape{Dim3(1), Dim3(kSumThreads), smem});
  double host = 0.0;
  launch.read_back(&host, result, sizeof(double));
  return host;
}

template <class Launch>
void accumulate_sum(Launch& launch, double* total, const float* x, size_t n) {
  launch.kernel(AccumulateSumKernel{total, x, n},
                LaunchShape{Dim3(1), Dim3(kSumThreads), sizeof(BlockReduceSmem<double>)});
}

template <class Launch, class E>
void adamw_update(Launch& launch, float* params, E* param_copies, const float* grads, float* m, float* v,
                  const AdamWSegment* segments, size_t count, const AdamWSettings& h) {
  if (count == 0) return;
  const LaunchShape shape{Dim3(static_cast<unsigned>(count)), Dim3(kAdamWThreads), 0};
  launch.kernel(AdamWKernel<E>{params, param_copies, grads, m, v, segments, h}, shape);
}

}  // namespace eth::kernels::gpu_ops

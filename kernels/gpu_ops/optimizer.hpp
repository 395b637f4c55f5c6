// The optimizer's ops and the step's one other reduction: the sum of squares behind the global
// gradient norm, in double and deterministic (a fixed grid of partial sums, then one block adding
// them in a fixed order); the AdamW update, elementwise with the CPU twin's formula term for
// term; and the device-side sum of per-sample losses.
#pragma once

#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {

// Fixed, not derived from the device: the order of additions, and so the result's last bits,
// must not depend on which GPU runs it.
constexpr int kSumBlocks = 1024;
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

// Grid-stride over the n parameters, one element per thread step.
struct AdamWKernel {
  static constexpr const char* kName = "adamw_update";
  Global<float> params;       // (n)
  Global<const float> grads;  // (n)
  Global<float> m, v;         // (n)
  size_t n;
  float lr, beta1, beta2, eps, weight_decay, grad_scale, correction1, correction2;

  SIMT_DEVICE void operator()(Thread& t) const {
    for (size_t i = global_index(t); i < n; i += grid_stride(t)) {
      const float g = grads[i] * grad_scale;
      const float mi = beta1 * m[i] + (1.f - beta1) * g;
      const float vi = beta2 * v[i] + (1.f - beta2) * g * g;
      m[i] = mi;
      v[i] = vi;
      const float m_hat = mi / correction1;
      const float v_hat = vi / correction2;
      const float p = params[i];
      params[i] = p - lr * (m_hat / (simt::sqrtf_(v_hat) + eps) + weight_decay * p);
    }
  }
};

template <class Launch>
double sum_of_squares(Launch& launch, const float* x, size_t n) {
  auto* partials = static_cast<double*>(launch.scratch(sizeof(double) * (kSumBlocks + 1)));  // (kSumBlocks), result
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

template <class Launch>
void adamw_update(Launch& launch, float* params, const float* grads, float* m, float* v, size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, float grad_scale, float correction1,
                  float correction2) {
  if (n == 0) return;
  launch.kernel(AdamWKernel{params, grads, m, v, n, lr, beta1, beta2, eps, weight_decay, grad_scale, correction1,
                            correction2},
                LaunchShape{Dim3(grid_for(n, kAdamWThreads)), Dim3(kAdamWThreads), 0});
}

}  // namespace eth::kernels::gpu_ops

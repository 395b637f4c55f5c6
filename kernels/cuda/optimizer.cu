// The optimizer's ops and the step's one other reduction: the sum of squares behind the global
// gradient norm, in double and deterministic (a fixed grid of partial sums, then one block adding
// them in a fixed order); the AdamW update, elementwise with the CPU twin's formula term for
// term; and the device-side sum of per-sample losses.
#include "kernels/cuda/cuda_ops.cuh"

namespace eth::kernels::cuda {
namespace {

// Fixed, not derived from the device: the order of additions, and so the result's last bits,
// must not depend on which GPU runs it.
constexpr int kSumBlocks = 1024;
constexpr int kSumThreads = 256;

__global__ void sum_of_squares_partials_kernel(double* partials, const float* x, size_t n) {
  __shared__ double shared[kWarp];
  double s = 0.0;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    const double v = x[i];
    s += v * v;
  }
  s = block_sum(s, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void sum_partials_kernel(double* result, const double* partials, int count) {
  __shared__ double shared[kWarp];
  double s = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
  s = block_sum(s, shared);
  if (threadIdx.x == 0) *result = s;
}

// One block: each thread sums a strided share in double, then the block adds the shares in a
// fixed order and thread 0 adds the result to *total.
__global__ void accumulate_sum_kernel(double* total, const float* x, size_t n) {
  __shared__ double shared[kWarp];
  double s = 0.0;
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
  s = block_sum(s, shared);
  if (threadIdx.x == 0) *total += s;
}

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, size_t n, float lr, float beta1,
                             float beta2, float eps, float weight_decay, float grad_scale, float correction1,
                             float correction2) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    const float g = grads[i] * grad_scale;
    const float mi = beta1 * m[i] + (1.f - beta1) * g;
    const float vi = beta2 * v[i] + (1.f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float m_hat = mi / correction1;
    const float v_hat = vi / correction2;
    const float p = params[i];
    params[i] = p - lr * (m_hat / (sqrtf(v_hat) + eps) + weight_decay * p);
  }
}

}  // namespace

double sum_of_squares(cudaStream_t stream, Scratch& scratch, const float* x, size_t n) {
  auto* partials = static_cast<double*>(scratch.get(sizeof(double) * (kSumBlocks + 1)));  // (kSumBlocks), result
  double* result = partials + kSumBlocks;
  sum_of_squares_partials_kernel<<<kSumBlocks, kSumThreads, 0, stream>>>(partials, x, n);
  CUDA_CHECK_LAUNCH();
  sum_partials_kernel<<<1, kSumThreads, 0, stream>>>(result, partials, kSumBlocks);
  CUDA_CHECK_LAUNCH();
  double host = 0.0;
  CUDA_CHECK(cudaMemcpyAsync(&host, result, sizeof(double), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

void accumulate_sum(cudaStream_t stream, double* total, const float* x, size_t n) {
  accumulate_sum_kernel<<<1, kSumThreads, 0, stream>>>(total, x, n);
  CUDA_CHECK_LAUNCH();
}

void adamw_update(cudaStream_t stream, float* params, const float* grads, float* m, float* v, size_t n,
                  float lr, float beta1, float beta2, float eps, float weight_decay, float grad_scale,
                  float correction1, float correction2) {
  adamw_kernel<<<grid_for(n, 256), 256, 0, stream>>>(params, grads, m, v, n, lr, beta1, beta2, eps, weight_decay,
                                                     grad_scale, correction1, correction2);
  CUDA_CHECK_LAUNCH();
}

}  // namespace eth::kernels::cuda

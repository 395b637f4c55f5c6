// GELU (tanh approximation), the residual add and bf16 rounding: grid-stride loops, one element per thread
// step. The GELU expressions are the CPU twin's, term for term. gelu_backward may run in place
// (dinp == dout, as lib/model/stage.cpp calls it): each element is read before it is written, by the
// same thread, so the pointers are deliberately not __restrict__.
#include <cuda_bf16.h>

#include "kernels/cuda/cuda_ops.cuh"

namespace eth::kernels::cuda {
namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;
constexpr float kGeluCubic3 = static_cast<float>(3 * 0.044715);

__global__ void gelu_forward_kernel(float* out, const float* inp, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.f + tanhf(kGeluScale * (x + kGeluCubic * x * x * x)));
  }
}

__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    const float x = inp[i];
    const float th = tanhf(kGeluScale * (x + kGeluCubic * x * x * x));
    const float sech2 = 1.f - th * th;
    const float local = 0.5f * (1.f + th) + 0.5f * x * sech2 * kGeluScale * (1.f + kGeluCubic3 * x * x);
    dinp[i] = local * dout[i];
  }
}

__global__ void residual_forward_kernel(float* out, const float* a, const float* b, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    out[i] = a[i] + b[i];
}

// The hardware's fp32 -> bf16 conversion, round to nearest even: what a bf16 kernel does when it
// stores. kernels/cpu/bf16.hpp is its CPU twin. May run in place.
__global__ void round_to_bf16_kernel(float* out, const float* inp, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    out[i] = __bfloat162float(__float2bfloat16_rn(inp[i]));
}

__device__ long long global_ns() {
  long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void stall_kernel(long long ns) {
  const long long start = global_ns();
  while (global_ns() - start < ns) {
  }
}

}  // namespace

void stall(long long ns, cudaStream_t stream) {
  stall_kernel<<<1, 1, 0, stream>>>(ns);
  CUDA_CHECK_LAUNCH();
}

void gelu_forward(cudaStream_t stream, float* out, const float* inp, size_t n) {
  gelu_forward_kernel<<<grid_for(n, 256), 256, 0, stream>>>(out, inp, n);
  CUDA_CHECK_LAUNCH();
}

void gelu_backward(cudaStream_t stream, float* dinp, const float* inp, const float* dout, size_t n) {
  gelu_backward_kernel<<<grid_for(n, 256), 256, 0, stream>>>(dinp, inp, dout, n);
  CUDA_CHECK_LAUNCH();
}

void residual_forward(cudaStream_t stream, float* out, const float* a, const float* b, size_t n) {
  residual_forward_kernel<<<grid_for(n, 256), 256, 0, stream>>>(out, a, b, n);
  CUDA_CHECK_LAUNCH();
}

void round_to_bf16(cudaStream_t stream, float* out, const float* inp, size_t n) {
  if (n == 0) return;
  round_to_bf16_kernel<<<grid_for(n, 256), 256, 0, stream>>>(out, inp, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace eth::kernels::cuda

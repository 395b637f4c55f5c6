// The elementwise family of kernels/gpu_ops/elementwise.hpp on the CUDA backend, and the stall
// kernel behind Device::stall (a test's stand-in for slow work, not an op: CUDA only).
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/elementwise.hpp"

namespace eth::kernels {

template void gpu_ops::gelu_forward<cuda::CudaLaunch, float>(cuda::CudaLaunch&, float*, const float*, size_t);
template void gpu_ops::gelu_forward<cuda::CudaLaunch, bf16>(cuda::CudaLaunch&, bf16*, const bf16*, size_t);
template void gpu_ops::gelu_backward<cuda::CudaLaunch, float>(cuda::CudaLaunch&, float*, const float*, const float*,
                                                              size_t);
template void gpu_ops::gelu_backward<cuda::CudaLaunch, bf16>(cuda::CudaLaunch&, bf16*, const bf16*, const bf16*, size_t);
template void gpu_ops::residual_forward<cuda::CudaLaunch, float>(cuda::CudaLaunch&, float*, const float*, const float*,
                                                                 size_t);
template void gpu_ops::residual_forward<cuda::CudaLaunch, bf16>(cuda::CudaLaunch&, bf16*, const bf16*, const bf16*,
                                                                size_t);
template void gpu_ops::gelu_forward<cuda::CudaLaunch, fp16>(cuda::CudaLaunch&, fp16*, const fp16*, size_t);
template void gpu_ops::gelu_backward<cuda::CudaLaunch, fp16>(cuda::CudaLaunch&, fp16*, const fp16*, const fp16*, size_t);
template void gpu_ops::residual_forward<cuda::CudaLaunch, fp16>(cuda::CudaLaunch&, fp16*, const fp16*, const fp16*,
                                                                size_t);
template void gpu_ops::round_to<cuda::CudaLaunch, bf16>(cuda::CudaLaunch&, float*, const float*, size_t);
template void gpu_ops::round_to<cuda::CudaLaunch, fp16>(cuda::CudaLaunch&, float*, const float*, size_t);
template void gpu_ops::convert<cuda::CudaLaunch, bf16, float>(cuda::CudaLaunch&, bf16*, const float*, size_t);
template void gpu_ops::convert<cuda::CudaLaunch, float, bf16>(cuda::CudaLaunch&, float*, const bf16*, size_t);
template void gpu_ops::convert<cuda::CudaLaunch, fp16, float>(cuda::CudaLaunch&, fp16*, const float*, size_t);
template void gpu_ops::convert<cuda::CudaLaunch, float, fp16>(cuda::CudaLaunch&, float*, const fp16*, size_t);
template void gpu_ops::convert<cuda::CudaLaunch, bf16, fp16>(cuda::CudaLaunch&, bf16*, const fp16*, size_t);
template void gpu_ops::convert<cuda::CudaLaunch, fp16, bf16>(cuda::CudaLaunch&, fp16*, const bf16*, size_t);
template void gpu_ops::convert_saturating<cuda::CudaLaunch, bf16, float>(cuda::CudaLaunch&, bf16*, const float*, size_t,
                                                                         unsigned*);
template void gpu_ops::convert_saturating<cuda::CudaLaunch, float, bf16>(cuda::CudaLaunch&, float*, const bf16*, size_t,
                                                                         unsigned*);
template void gpu_ops::convert_saturating<cuda::CudaLaunch, fp16, float>(cuda::CudaLaunch&, fp16*, const float*, size_t,
                                                                         unsigned*);
template void gpu_ops::convert_saturating<cuda::CudaLaunch, float, fp16>(cuda::CudaLaunch&, float*, const fp16*, size_t,
                                                                         unsigned*);
template void gpu_ops::convert_saturating<cuda::CudaLaunch, bf16, fp16>(cuda::CudaLaunch&, bf16*, const fp16*, size_t,
                                                                        unsigned*);
template void gpu_ops::convert_saturating<cuda::CudaLaunch, fp16, bf16>(cuda::CudaLaunch&, fp16*, const bf16*, size_t,
                                                                        unsigned*);

namespace cuda {
namespace {

__device__ long long global_ns() {
  long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread spinning on the global timer for `ns`.
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

}  // namespace cuda
}  // namespace eth::kernels

// RMSNorm (kernels/gpu_ops/layernorm.hpp: the layernorm kernels without mean or bias) on the
// CUDA backend, for fp32, bf16 and fp16 storage.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/layernorm.hpp"

namespace eth::kernels {

#define ETH_RMSNORM(E)                                                                                              \
  template void gpu_ops::rmsnorm_forward<cuda::CudaLaunch, E>(cuda::CudaLaunch&, E*, float*, const E*, const E*, int, \
                                                              int, float);                                         \
  template void gpu_ops::rmsnorm_backward<cuda::CudaLaunch, E>(cuda::CudaLaunch&, E*, float*, const E*, const E*,    \
                                                               const E*, const float*, int, int);
ETH_RMSNORM(float)
ETH_RMSNORM(bf16)
ETH_RMSNORM(fp16)
#undef ETH_RMSNORM

}  // namespace eth::kernels

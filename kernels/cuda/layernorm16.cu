// The 16-bit layernorm ops and the fused residual + RMSNorm (kernels/gpu_ops/layernorm16.hpp)
// for the CUDA backend, at E = bf16 and fp16.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/layernorm16.hpp"

namespace eth::kernels {
#define ETH_INSTANTIATE_LAYERNORM16(E)                                                                              \
  template void gpu_ops::fused_residual_layernorm_forward16<cuda::CudaLaunch, E>(                                   \
      cuda::CudaLaunch&, E*, E*, float*, float*, const E*, const E*, const E*, const E*, int, int);                 \
  template void gpu_ops::fused_residual_rmsnorm_forward16<cuda::CudaLaunch, E>(                                     \
      cuda::CudaLaunch&, E*, E*, float*, const E*, const E*, const E*, int, int, float);                            \
  template void gpu_ops::layernorm_backward16<cuda::CudaLaunch, E>(cuda::CudaLaunch&, E*, float*, float*, const E*, \
                                                                   const E*, const E*, const float*, const float*,  \
                                                                   int, int);
ETH_INSTANTIATE_LAYERNORM16(bf16)
ETH_INSTANTIATE_LAYERNORM16(fp16)
#undef ETH_INSTANTIATE_LAYERNORM16
}  // namespace eth::kernels

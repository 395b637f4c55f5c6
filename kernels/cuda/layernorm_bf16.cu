// The bf16 layernorm ops (kernels/gpu_ops/layernorm_bf16.hpp) for the CUDA backend.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/layernorm_bf16.hpp"

namespace eth::kernels {
template void gpu_ops::fused_residual_layernorm_forward_bf16<cuda::CudaLaunch>(cuda::CudaLaunch&, bf16*, bf16*, float*,
                                                                               float*, const bf16*, const bf16*,
                                                                               const bf16*, const bf16*, int, int);
template void gpu_ops::layernorm_backward_bf16<cuda::CudaLaunch>(cuda::CudaLaunch&, bf16*, float*, float*, const bf16*,
                                                                 const bf16*, const bf16*, const float*, const float*,
                                                                 int, int);
}  // namespace eth::kernels

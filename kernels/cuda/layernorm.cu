// The layernorm ops (kernels/gpu_ops/layernorm.hpp) for the CUDA backend.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/layernorm.hpp"

namespace eth::kernels {
template void gpu_ops::layernorm_forward<cuda::CudaLaunch, float>(cuda::CudaLaunch&, float*, float*, float*,
                                                                  const float*, const float*, const float*, int, int);
template void gpu_ops::layernorm_forward<cuda::CudaLaunch, bf16>(cuda::CudaLaunch&, bf16*, float*, float*, const bf16*,
                                                                 const bf16*, const bf16*, int, int);
template void gpu_ops::layernorm_forward<cuda::CudaLaunch, fp16>(cuda::CudaLaunch&, fp16*, float*, float*, const fp16*,
                                                                 const fp16*, const fp16*, int, int);
template void gpu_ops::layernorm_backward<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, float*, float*, const float*,
                                                            const float*, const float*, const float*, const float*,
                                                            int, int);
}  // namespace eth::kernels

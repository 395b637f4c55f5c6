// The bf16 AdamW op (kernels/gpu_ops/optimizer_bf16.hpp) for the CUDA backend.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/optimizer_bf16.hpp"

namespace eth::kernels {
template void gpu_ops::adamw_update_bf16<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, bf16*, const float*, float*, float*,
                                                           size_t, float, float, float, float, float, float, float,
                                                           float);
}  // namespace eth::kernels

// The bf16 flash attention ops of kernels/gpu_ops/flash_attention_bf16.hpp (the kernels and their
// launches) compiled for the CUDA backend.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/flash_attention_bf16.hpp"

namespace eth::kernels {

template void gpu_ops::attention_forward_bf16<cuda::CudaLaunch>(cuda::CudaLaunch&, bf16*, float*, const bf16*, int, int,
                                                                int, int);
template void gpu_ops::attention_backward_bf16<cuda::CudaLaunch>(cuda::CudaLaunch&, bf16*, const bf16*, const bf16*,
                                                                 const bf16*, const float*, int, int, int, int);

}  // namespace eth::kernels

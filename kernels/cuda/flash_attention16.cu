// The 16-bit flash attention ops of kernels/gpu_ops/flash_attention16.hpp (the kernels and
// their launches) compiled for the CUDA backend, at E = bf16 and fp16.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/flash_attention16.hpp"

namespace eth::kernels {
#define ETH_INSTANTIATE_FLASH16(E)                                                                                    \
  template void gpu_ops::attention_forward16<cuda::CudaLaunch, E>(cuda::CudaLaunch&, E*, float*, const E*, int, int, \
                                                                  AttentionHeads);                                  \
  template void gpu_ops::attention_backward16<cuda::CudaLaunch, E>(cuda::CudaLaunch&, E*, const E*, const E*,        \
                                                                   const E*, const float*, int, int, AttentionHeads);
ETH_INSTANTIATE_FLASH16(bf16)
ETH_INSTANTIATE_FLASH16(fp16)
#undef ETH_INSTANTIATE_FLASH16
}  // namespace eth::kernels

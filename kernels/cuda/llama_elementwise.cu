// The llama family's elementwise kernels (kernels/gpu_ops/llama_elementwise.hpp) on the CUDA
// backend, for fp32, bf16 and fp16 storage.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/llama_elementwise.hpp"

namespace eth::kernels {

#define ETH_LLAMA_ELEMENTWISE(E)                                                                                    \
  template void gpu_ops::swiglu_forward<cuda::CudaLaunch, E>(cuda::CudaLaunch&, E*, const E*, int, int);          \
  template void gpu_ops::swiglu_backward<cuda::CudaLaunch, E>(cuda::CudaLaunch&, E*, const E*, const E*, int, int); \
  template void gpu_ops::rotary<cuda::CudaLaunch, E>(cuda::CudaLaunch&, E*, const float*, int, int, int,          \
                                                     AttentionHeads, float);
ETH_LLAMA_ELEMENTWISE(float)
ETH_LLAMA_ELEMENTWISE(bf16)
ETH_LLAMA_ELEMENTWISE(fp16)
#undef ETH_LLAMA_ELEMENTWISE

}  // namespace eth::kernels

// The bf16 matmul ops (kernels/gpu_ops/matmul16.hpp) for the CUDA backend: cuBLASLt through
// CudaLaunch.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/matmul16.hpp"

namespace eth::kernels {
#define ETH_INSTANTIATE_MATMUL16(E)                                                                                     \
  template void gpu_ops::matmul_forward16<cuda::CudaLaunch, E>(cuda::CudaLaunch&, E*, E*, const E*, const E*, const E*, \
                                                               int, int, int);                                       \
  template void gpu_ops::matmul_backward16<cuda::CudaLaunch, E>(cuda::CudaLaunch&, E*, float*, float*, const E*,       \
                                                                const E*, const E*, const E*, int, int, int);
ETH_INSTANTIATE_MATMUL16(bf16)
ETH_INSTANTIATE_MATMUL16(fp16)
#undef ETH_INSTANTIATE_MATMUL16
}  // namespace eth::kernels

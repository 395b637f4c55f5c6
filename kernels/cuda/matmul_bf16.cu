// The bf16 matmul ops (kernels/gpu_ops/matmul_bf16.hpp) for the CUDA backend: cuBLASLt through
// CudaLaunch.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/matmul_bf16.hpp"

namespace eth::kernels {
template void gpu_ops::matmul_forward_bf16<cuda::CudaLaunch>(cuda::CudaLaunch&, bf16*, bf16*, const bf16*,
                                                             const bf16*, const bf16*, int, int, int);
template void gpu_ops::matmul_backward_bf16<cuda::CudaLaunch>(cuda::CudaLaunch&, bf16*, float*, float*,
                                                              const bf16*, const bf16*, const bf16*,
                                                              const bf16*, int, int, int);
}  // namespace eth::kernels

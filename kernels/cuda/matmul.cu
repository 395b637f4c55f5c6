// The matmul ops (kernels/gpu_ops/matmul.hpp) for the CUDA backend: cuBLAS through CudaLaunch.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/matmul.hpp"

namespace eth::kernels {
template void gpu_ops::matmul_forward<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, const float*, const float*,
                                                        const float*, int, int, int);
template void gpu_ops::matmul_backward<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, float*, float*, const float*,
                                                         const float*, const float*, int, int, int);
}  // namespace eth::kernels

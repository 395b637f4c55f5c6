// The cross-entropy op (kernels/gpu_ops/crossentropy.hpp) for the CUDA backend.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/crossentropy.hpp"

namespace eth::kernels {
template void gpu_ops::crossentropy_forward_backward<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, float*,
                                                                       const int32_t*, int, int, int, int, float);
}  // namespace eth::kernels

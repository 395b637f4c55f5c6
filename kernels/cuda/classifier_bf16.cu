// The bf16 classifier ops (kernels/gpu_ops/classifier_bf16.hpp) for the CUDA backend.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/classifier_bf16.hpp"

namespace eth::kernels {
template void gpu_ops::classifier_rows_bf16<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, bf16*, const int32_t*, int, int,
                                                              int, float);
template void gpu_ops::sample_mean_losses<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, const float*, int, int);
template void gpu_ops::crossentropy_forward_backward<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, bf16*, const int32_t*,
                                                                       int, int, int, int, float);
}  // namespace eth::kernels

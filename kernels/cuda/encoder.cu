// The encoder ops (kernels/gpu_ops/encoder.hpp) for the CUDA backend.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/encoder.hpp"

namespace eth::kernels {
template void gpu_ops::encoder_forward<cuda::CudaLaunch, float>(cuda::CudaLaunch&, float*, const int32_t*,
                                                                const float*, const float*, int, int, int);
template void gpu_ops::encoder_forward<cuda::CudaLaunch, bf16>(cuda::CudaLaunch&, bf16*, const int32_t*, const float*,
                                                               const float*, int, int, int);
template void gpu_ops::encoder_backward<cuda::CudaLaunch, float>(cuda::CudaLaunch&, float*, float*, const float*,
                                                                 const int32_t*, int, int, int);
template void gpu_ops::encoder_backward<cuda::CudaLaunch, bf16>(cuda::CudaLaunch&, float*, float*, const bf16*,
                                                                const int32_t*, int, int, int);
template void gpu_ops::encoder_forward<cuda::CudaLaunch, fp16>(cuda::CudaLaunch&, fp16*, const int32_t*, const float*,
                                                               const float*, int, int, int);
template void gpu_ops::encoder_backward<cuda::CudaLaunch, fp16>(cuda::CudaLaunch&, float*, float*, const fp16*,
                                                                const int32_t*, int, int, int);
}  // namespace eth::kernels

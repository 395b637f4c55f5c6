// The 16-bit classifier ops (kernels/gpu_ops/classifier16.hpp) for the CUDA backend, at E =
// bf16 and fp16.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/classifier16.hpp"

namespace eth::kernels {
template void gpu_ops::sample_mean_losses<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, const float*, int, int);
#define ETH_INSTANTIATE_CLASSIFIER16(E)                                                                             \
  template void gpu_ops::classifier_rows16<cuda::CudaLaunch, E>(cuda::CudaLaunch&, float*, E*, const int32_t*, int, \
                                                                int, int, float);                                   \
  template void gpu_ops::crossentropy_forward_backward16<cuda::CudaLaunch, E>(cuda::CudaLaunch&, float*, E*,        \
                                                                              const int32_t*, int, int, int, int,   \
                                                                              float);
ETH_INSTANTIATE_CLASSIFIER16(bf16)
ETH_INSTANTIATE_CLASSIFIER16(fp16)
#undef ETH_INSTANTIATE_CLASSIFIER16
}  // namespace eth::kernels

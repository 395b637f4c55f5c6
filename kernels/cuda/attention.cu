// The attention ops of kernels/gpu_ops/attention.hpp (the kernels and their launches) compiled
// for the CUDA backend.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/attention.hpp"

namespace eth::kernels {

template void gpu_ops::attention_forward<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, float*, const float*, int, int,
                                                           AttentionHeads);
template void gpu_ops::attention_backward<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, const float*, const float*,
                                                            const float*, const float*, int, int, AttentionHeads);

}  // namespace eth::kernels

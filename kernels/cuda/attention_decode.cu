// The decoding attention of kernels/gpu_ops/attention_decode.hpp compiled for the CUDA backend.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/attention_decode.hpp"

namespace eth::kernels {

template void gpu_ops::attention_decode<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, float*, float*, const float*, int,
                                                          int, int, int, AttentionHeads);

}  // namespace eth::kernels

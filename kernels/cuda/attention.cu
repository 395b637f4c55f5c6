// The attention ops of kernels/gpu_ops/attention.hpp (the kernels and their launches) compiled
// for the CUDA backend.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/cuda/cuda_ops.cuh"
#include "kernels/gpu_ops/attention.hpp"

namespace eth::kernels {

template void gpu_ops::attention_forward<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, float*, const float*, int, int,
                                                           int, int);
template void gpu_ops::attention_backward<cuda::CudaLaunch>(cuda::CudaLaunch&, float*, const float*, const float*,
                                                            const float*, const float*, int, int, int, int);

// Until kernels/cuda/cuda_backend.cu calls the gpu_ops directly: the old entry points, each a
// CudaLaunch on the stream (the attention ops make no library call, so it needs no cuBLAS
// handle, and no scratch).
namespace cuda {

void attention_forward(cudaStream_t stream, float* out, float* lse, const float* qkv, int B, int T, int C, int NH) {
  CudaLaunch launch(stream, nullptr);
  gpu_ops::attention_forward(launch, out, lse, qkv, B, T, C, NH);
}

void attention_backward(cudaStream_t stream, float* dqkv, const float* dout, const float* qkv, const float* out,
                        const float* lse, int B, int T, int C, int NH) {
  CudaLaunch launch(stream, nullptr);
  gpu_ops::attention_backward(launch, dqkv, dout, qkv, out, lse, B, T, C, NH);
}

}  // namespace cuda
}  // namespace eth::kernels

// CudaLaunch's library calls, in one translation unit so that CUB's sort kernels are compiled once.
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/cuda_launch.cuh"

namespace eth::kernels::cuda {

void CudaLaunch::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* A, int lda,
                      const float* B, int ldb, float beta, float* C, int ldc) {
  CUBLAS_CHECK(cublasSgemm(cublas_, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
                           &alpha, A, lda, B, ldb, &beta, C, ldc));
}

// Keys are non-negative token ids, so all 32 bits order them correctly (the sign bit is 0 for all).
void CudaLaunch::sort_pairs(const int32_t* keys_in, int32_t* keys_out, const int32_t* values_in, int32_t* values_out,
                            int n) {
  size_t bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in, keys_out, values_in, values_out, n, 0, 32,
                                             stream_));
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_scratch_.get(bytes), bytes, keys_in, keys_out, values_in,
                                             values_out, n, 0, 32, stream_));
}

void CudaLaunch::read_back(void* host, const void* src, size_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace eth::kernels::cuda

// Matmuls through cuBLAS. Our buffers are row-major; cuBLAS is column-major, and a row-major
// (R, K) matrix is the same memory as a column-major (K, R) one, its transpose. So every
// row-major product Y = A B is computed as the column-major Y^T = B^T A^T:
//
//   out  (N, OC) = inp (N, C) W^T       ->  out^T  (OC, N) = W   . inp^T   gemm(T, N, OC, N, C)
//   dinp (N, C)  = dout (N, OC) W       ->  dinp^T (C, N)  = W^T . dout^T  gemm(N, N, C, N, OC)
//   dW   (OC, C) += dout^T (OC, N) inp  ->  dW^T   (C, OC) += inp^T . dout gemm(N, T, C, OC, N)
//
// The bias is added by a separate elementwise kernel and dbias reduced by the deterministic
// column sums. cuBLAS is bitwise reproducible run to run on one GPU model and toolkit (it uses
// no atomics unless cublasSetAtomicsMode allows them, which we do not).
#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/cuda_ops.cuh"

namespace eth::kernels::cuda {
namespace {

__global__ void add_bias_kernel(float* out, const float* bias, int OC, size_t total) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x)
    out[i] += bias[i % OC];
}

struct BiasTerm {
  const float* dout;
  int OC;
  __device__ float2 operator()(size_t n, int j) const { return make_float2(dout[n * OC + j], 0.f); }
};

}  // namespace

void matmul_forward(cublasHandle_t cublas, cudaStream_t stream, float* out, const float* inp,
                    const float* weight, const float* bias, int N, int C, int OC) {
  if (N == 0 || OC == 0) return;
  const float one = 1.f, zero = 0.f;
  CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, &one, weight, C, inp, C, &zero, out, OC));
  if (bias == nullptr) return;
  const size_t total = static_cast<size_t>(N) * OC;
  add_bias_kernel<<<grid_for(total, 256), 256, 0, stream>>>(out, bias, OC, total);
  CUDA_CHECK_LAUNCH();
}

void matmul_backward(cublasHandle_t cublas, cudaStream_t stream, Scratch& scratch, float* dinp,
                     float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC) {
  if (N == 0 || C == 0 || OC == 0) return;
  const float one = 1.f, zero = 0.f;
  CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, &one, weight, C, dout, OC, &zero, dinp, C));
  CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, &one, inp, C, dout, OC, &one, dweight, C));
  if (dbias == nullptr) return;
  add_column_sums(stream, scratch, dbias, nullptr, BiasTerm{dout, OC}, N, OC);
}

}  // namespace eth::kernels::cuda

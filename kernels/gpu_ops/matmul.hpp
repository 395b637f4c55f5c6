// Matmuls through launch.gemm (cuBLAS sgemm's contract). Our buffers are row-major; the GEMM is
// column-major, and a row-major (R, K) matrix is the same memory as a column-major (K, R) one,
// its transpose. So every row-major product Y = A B is computed as the column-major Y^T = B^T A^T:
//
//   out  (N, OC) = inp (N, C) W^T       ->  out^T  (OC, N) = W   . inp^T   gemm(T, N, OC, N, C)
//   dinp (N, C)  = dout (N, OC) W       ->  dinp^T (C, N)  = W^T . dout^T  gemm(N, N, C, N, OC)
//   dW   (OC, C) += dout^T (OC, N) inp  ->  dW^T   (C, OC) += inp^T . dout gemm(N, T, C, OC, N)
//
// The bias is added by a separate elementwise kernel and dbias reduced by the deterministic
// column sums. cuBLAS is bitwise reproducible run to run on one GPU model and toolkit (it uses
// no atomics unless cublasSetAtomicsMode allows them, which we do not).
#pragma once

#include "kernels/gpu_ops/column_sums.hpp"
#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {

constexpr int kBiasThreads = 256;

// Grid-stride over the (N, OC) outputs, one element per thread step: out[n, j] += bias[j].
struct AddBiasKernel {
  static constexpr const char* kName = "matmul_add_bias";
  Global<float> out;         // (N, OC)
  Global<const float> bias;  // (OC)
  int OC;
  size_t total;              // N * OC

  SIMT_DEVICE void operator()(Thread& t) const {
    for (size_t i = global_index(t); i < total; i += grid_stride(t)) out[i] += bias[i % OC];
  }
};

// dbias's one term per row: (dout[n, j], 0).
struct BiasTerm {
  static constexpr const char* kName = "matmul_backward_dbias_partials";
  Global<const float> dout;  // (N, OC)
  int OC;

  SIMT_DEVICE Float2 operator()(size_t n, int j) const { return Float2{dout[n * OC + j], 0.f}; }
};

template <class Launch>
void matmul_forward(Launch& launch, float* out, const float* inp, const float* weight, const float* bias, int N,
                    int C, int OC) {
  if (N == 0 || OC == 0) return;
  launch.gemm(true, false, OC, N, C, 1.f, weight, C, inp, C, 0.f, out, OC);
  if (bias == nullptr) return;
  const size_t total = static_cast<size_t>(N) * OC;
  launch.kernel(AddBiasKernel{out, bias, OC, total},
                LaunchShape{Dim3(grid_for(total, kBiasThreads)), Dim3(kBiasThreads), 0});
}

template <class Launch>
void matmul_backward(Launch& launch, float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int N, int C, int OC) {
  if (N == 0 || C == 0 || OC == 0) return;
  launch.gemm(false, false, C, N, OC, 1.f, weight, C, dout, OC, 0.f, dinp, C);
  launch.gemm(false, true, C, OC, N, 1.f, inp, C, dout, OC, 1.f, dweight, C);
  if (dbias == nullptr) return;
  add_column_sums(launch, dbias, nullptr, BiasTerm{dout, OC}, N, OC);
}

}  // namespace eth::kernels::gpu_ops

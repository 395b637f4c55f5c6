// Row-major GEMM for the CPU ops, on float (training) and double (the finite-difference tests):
// C = alpha * op(A) @ op(B) + beta * C. Inside an OpenMP parallel region the OpenMP build of
// OpenBLAS runs single-threaded, which is what the per-head and per-tile loops want.
#pragma once

#include <cblas.h>

namespace eth::kernels::cpu {

inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                 const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A, int lda,
                 const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// y = A @ x for row-major A (M, N): one row of a matmul (generation's one new position) reads
// the weights once, where a GEMM of one row would pack all of them first.
inline void gemv(int M, int N, const float* A, const float* x, float* y) {
  cblas_sgemv(CblasRowMajor, CblasNoTrans, M, N, 1.0f, A, N, x, 1, 0.0f, y, 1);
}
inline void gemv(int M, int N, const double* A, const double* x, double* y) {
  cblas_dgemv(CblasRowMajor, CblasNoTrans, M, N, 1.0, A, N, x, 1, 0.0, y, 1);
}

}  // namespace eth::kernels::cpu

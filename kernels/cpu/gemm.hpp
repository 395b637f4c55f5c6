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

}  // namespace eth::kernels::cpu

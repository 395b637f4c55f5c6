// Plain-loop GEMMs behind fallback_cblas/cblas.h: C = alpha op(A) op(B) + beta C, row- or
// column-major. Rows of C are split among OpenMP threads (one thread when called inside a
// parallel region, as the attention loops do); each element's sum runs over k in order.
#include "cblas.h"

#include <cstddef>

namespace {

template <typename F>
void gemm(CBLAS_ORDER order, CBLAS_TRANSPOSE trans_a, CBLAS_TRANSPOSE trans_b, int M, int N, int K, F alpha,
          const F* A, int lda, const F* B, int ldb, F beta, F* C, int ldc) {
  // Column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T: swap the operands.
  if (order == CblasColMajor) {
    gemm(CblasRowMajor, trans_b, trans_a, N, M, K, alpha, B, ldb, A, lda, beta, C, ldc);
    return;
  }
  const bool ta = trans_a != CblasNoTrans, tb = trans_b != CblasNoTrans;
#pragma omp parallel for schedule(static)
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < N; j++) {
      F sum = 0;
      for (int k = 0; k < K; k++) {
        const F a = ta ? A[static_cast<size_t>(k) * lda + i] : A[static_cast<size_t>(i) * lda + k];
        const F b = tb ? B[static_cast<size_t>(j) * ldb + k] : B[static_cast<size_t>(k) * ldb + j];
        sum += a * b;
      }
      F& c = C[static_cast<size_t>(i) * ldc + j];
      c = alpha * sum + (beta == F(0) ? F(0) : beta * c);
    }
  }
}

}  // namespace

extern "C" void cblas_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE trans_a, CBLAS_TRANSPOSE trans_b, int M, int N, int K,
                            float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
                            int ldc) {
  gemm(order, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

extern "C" void cblas_dgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE trans_a, CBLAS_TRANSPOSE trans_b, int M, int N, int K,
                            double alpha, const double* A, int lda, const double* B, int ldb, double beta, double* C,
                            int ldc) {
  gemm(order, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// A stand-in for <cblas.h> with the two GEMMs the CPU reference twin (kernels/cpu/gpt_ops.cpp)
// calls, for GPU machines without OpenBLAS: the CPU backend there only checks the CUDA backend
// on small shapes, so plain loops are fast enough. bench/gpu/CMakeLists.txt uses it only when
// pkg-config finds no OpenBLAS.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 };

void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a, enum CBLAS_TRANSPOSE trans_b, int M, int N,
                 int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc);
void cblas_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a, enum CBLAS_TRANSPOSE trans_b, int M, int N,
                 int K, double alpha, const double* A, int lda, const double* B, int ldb, double beta, double* C,
                 int ldc);

#ifdef __cplusplus
}
#endif

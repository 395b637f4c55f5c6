// The matrix products of the CPU backend's matmul ops, each element summed in one fixed order:
//
//   C (M, N) = op(A) (M, K) @ op(B) (K, N)      or, accumulating,      C += op(A) @ op(B)
//
// op(A) is A (M, K), or A (K, M) read transposed; op(B) is B (K, N), or B (N, K) read transposed;
// all row-major with leading dimensions lda, ldb, ldc. Every element of C is one chain of fused
// multiply-adds over k = 0, 1, ..., K - 1 in order, starting from zero or, accumulating, from C:
//
//   c[i][j] = fma(a[i][K-1], b[K-1][j], ... fma(a[i][1], b[1][j], fma(a[i][0], b[0][j], c0)) ...)
//
// So an element's bits depend on its own row of op(A), its own column of op(B) and where it
// starts, and on nothing else: not on M or N, nor on where the element falls in a tile, nor on
// the number of threads, nor on the processor (OpenBLAS picks its kernel by processor and
// OPENBLAS_CORETYPE, and each kernel splits K its own way), nor on how the K terms are shared
// among calls that accumulate: the weight gradient of samples 0-7 in one call equals that of
// samples 0-3 then 4-7. A step's numbers therefore do not depend on its micro-batch split, nor
// on the machine's BLAS (docs/design.md, "One summation order").
//
// The blocking is the usual one (a (kKc, kNc) panel of op(B) and a (kMc, kKc) block of op(A)
// packed, a (kMr, kNr) register tile); an element carried from one K panel to the next goes
// through C in fp32, which is the chain's own rounding, so the blocking changes no bit.
#pragma once

#include <vector>

namespace eth::kernels::cpu {

template <typename F>
void ordered_gemm(bool trans_a, bool trans_b, int M, int N, int K, const F* A, int lda, const F* B, int ldb,
                  bool accumulate, F* C, int ldc);

// The register tile's instructions: std::fma in plain loops (any processor, and every double),
// AVX2 or AVX-512 (float). Each computes the same chains, so the bits do not depend on which
// runs; ordered_gemm above takes the widest this processor has, and the tests run every one.
enum class GemmIsa { generic, avx2, avx512 };
// Those this processor runs, widest last.
std::vector<GemmIsa> available_gemm_isas();
template <typename F>
void ordered_gemm(bool trans_a, bool trans_b, int M, int N, int K, const F* A, int lda, const F* B, int ldb,
                  bool accumulate, F* C, int ldc, GemmIsa isa);

}  // namespace eth::kernels::cpu

#include "kernels/cpu/ordered_gemm.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace eth::kernels::cpu {
namespace {

// The register tile: kMr rows by kNr columns of C (on AVX-512, 12 registers of 16 floats; with
// the two of a B row and the broadcast A element, 15 of the 32; on AVX2 the tile's two halves one
// after the other, 12 of 16 registers each time). The cache blocks: the packed (kMc, kKc) A block
// (216 KB) in L2, where each (kKc, kNr) strip of the packed B panel meets every row strip of it;
// the (kKc, kNc) B panel (6 MB) in L3. kKc is long: every K panel reads and writes all of C,
// which does not fit in cache (at 256, GPT-2's products took 8-12% longer on one core, OpenBLAS's
// time the baseline; bench/bench_ordered_gemm).
constexpr int kMr = 6, kNr = 32;
constexpr int kKc = 768, kMc = 72, kNc = 2048;

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// op(X)[r][c] of a row-major matrix X, read transposed or not.
template <typename F>
struct Operand {
  const F* data;
  int ld;
  bool transposed;
  F at(int r, int c) const {
    return transposed ? data[static_cast<size_t>(c) * ld + r] : data[static_cast<size_t>(r) * ld + c];
  }
};

// Rows [i0, i0 + mc) and terms [k0, k0 + kc) of op(A), as strips of kMr rows, each (kc, kMr):
// the kernel reads one term's kMr elements together. Rows past M are zero (their results are
// computed into a scratch tile and dropped). The loops run along X's rows, whichever way it is
// read (a transposed A strided by its leading dimension in the inner loop took a fifth longer).
template <typename F>
void pack_a(F* packed, const Operand<F>& a, int M, int i0, int mc, int k0, int kc) {
  for (int s = 0; s < ceil_div(mc, kMr); s++) {
    F* strip = packed + static_cast<size_t>(s) * kc * kMr;
    const int rows = std::min(kMr, M - i0 - s * kMr);
    if (rows < kMr) std::fill_n(strip, static_cast<size_t>(kc) * kMr, F(0));
    for (int r = 0; r < rows && !a.transposed; r++)
      for (int k = 0; k < kc; k++) strip[k * kMr + r] = a.at(i0 + s * kMr + r, k0 + k);
    for (int k = 0; k < kc && a.transposed; k++)
      for (int r = 0; r < rows; r++) strip[k * kMr + r] = a.at(i0 + s * kMr + r, k0 + k);
  }
}

// Terms [k0, k0 + kc) and columns [j0 + s kNr, j0 + (s + 1) kNr) of op(B): strip s, (kc, kNr).
// Columns past N are zero; the loops run along B's rows, as pack_a's.
template <typename F>
void pack_b_strip(F* strip, const Operand<F>& b, int N, int j0, int s, int k0, int kc) {
  const int j = j0 + s * kNr, cols = std::min(kNr, N - j);
  if (cols < kNr) std::fill_n(strip, static_cast<size_t>(kc) * kNr, F(0));
  for (int c = 0; c < cols && b.transposed; c++)
    for (int k = 0; k < kc; k++) strip[k * kNr + c] = b.at(k0 + k, j + c);
  for (int k = 0; k < kc && !b.transposed; k++)
    for (int c = 0; c < cols; c++) strip[k * kNr + c] = b.at(k0 + k, j + c);
}

// c (kMr, kNr), leading dimension ldc: each element chained over the kc terms of a (kc, kMr)
// and b (kc, kNr), from c's value (load) or from zero.
template <typename F>
void tile_kernel_generic(int kc, const F* a, const F* b, F* c, int ldc, bool load) {
  F acc[kMr][kNr];
  for (int r = 0; r < kMr; r++)
    for (int j = 0; j < kNr; j++) acc[r][j] = load ? c[r * ldc + j] : F(0);
  for (int k = 0; k < kc; k++)
    for (int r = 0; r < kMr; r++)
      for (int j = 0; j < kNr; j++) acc[r][j] = std::fma(a[k * kMr + r], b[k * kNr + j], acc[r][j]);
  for (int r = 0; r < kMr; r++)
    for (int j = 0; j < kNr; j++) c[r * ldc + j] = acc[r][j];
}

#if defined(__x86_64__)
// The same chains in vector registers: vfmadd rounds once, as std::fma does, so the bits are the
// generic kernel's whatever the width. The 12 accumulators are named one by one: held in an
// array, GCC stores them to the stack after every multiply-add (half the speed). Each kernel is
// compiled for its instructions whatever the build's -march, and used where the processor has
// them: AVX-512 where it has it (on a Zen 5 core twice AVX2's rate, as OpenBLAS's own kernel
// showed), else AVX2.
__attribute__((target("avx512f"))) void tile_kernel_avx512(int kc, const float* a, const float* b, float* c, int ldc,
                                                           bool load) {
  static_assert(kMr == 6 && kNr == 32, "the AVX-512 kernel holds a 6 x 32 tile");
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
         c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  if (load) {
    c00 = _mm512_loadu_ps(c), c01 = _mm512_loadu_ps(c + 16);
    c10 = _mm512_loadu_ps(c + ldc), c11 = _mm512_loadu_ps(c + ldc + 16);
    c20 = _mm512_loadu_ps(c + 2 * ldc), c21 = _mm512_loadu_ps(c + 2 * ldc + 16);
    c30 = _mm512_loadu_ps(c + 3 * ldc), c31 = _mm512_loadu_ps(c + 3 * ldc + 16);
    c40 = _mm512_loadu_ps(c + 4 * ldc), c41 = _mm512_loadu_ps(c + 4 * ldc + 16);
    c50 = _mm512_loadu_ps(c + 5 * ldc), c51 = _mm512_loadu_ps(c + 5 * ldc + 16);
  }
  for (int k = 0; k < kc; k++, a += kMr, b += kNr) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
    __m512 ar = _mm512_set1_ps(a[0]);
    c00 = _mm512_fmadd_ps(ar, b0, c00), c01 = _mm512_fmadd_ps(ar, b1, c01);
    ar = _mm512_set1_ps(a[1]);
    c10 = _mm512_fmadd_ps(ar, b0, c10), c11 = _mm512_fmadd_ps(ar, b1, c11);
    ar = _mm512_set1_ps(a[2]);
    c20 = _mm512_fmadd_ps(ar, b0, c20), c21 = _mm512_fmadd_ps(ar, b1, c21);
    ar = _mm512_set1_ps(a[3]);
    c30 = _mm512_fmadd_ps(ar, b0, c30), c31 = _mm512_fmadd_ps(ar, b1, c31);
    ar = _mm512_set1_ps(a[4]);
    c40 = _mm512_fmadd_ps(ar, b0, c40), c41 = _mm512_fmadd_ps(ar, b1, c41);
    ar = _mm512_set1_ps(a[5]);
    c50 = _mm512_fmadd_ps(ar, b0, c50), c51 = _mm512_fmadd_ps(ar, b1, c51);
  }
  _mm512_storeu_ps(c, c00), _mm512_storeu_ps(c + 16, c01);
  _mm512_storeu_ps(c + ldc, c10), _mm512_storeu_ps(c + ldc + 16, c11);
  _mm512_storeu_ps(c + 2 * ldc, c20), _mm512_storeu_ps(c + 2 * ldc + 16, c21);
  _mm512_storeu_ps(c + 3 * ldc, c30), _mm512_storeu_ps(c + 3 * ldc + 16, c31);
  _mm512_storeu_ps(c + 4 * ldc, c40), _mm512_storeu_ps(c + 4 * ldc + 16, c41);
  _mm512_storeu_ps(c + 5 * ldc, c50), _mm512_storeu_ps(c + 5 * ldc + 16, c51);
}

// Half a tile: columns [0, 16) of b's strips of kNr columns, into c's first 16 columns.
__attribute__((target("avx2,fma"))) void tile_kernel_avx2(int kc, const float* a, const float* b, float* c, int ldc,
                                                          bool load) {
  static_assert(kMr == 6 && kNr % 16 == 0, "the AVX2 kernel holds 6 rows of 16 columns");
  // (No lambdas: they would not inherit the target attribute, and builds without -march=avx2
  // then fail to inline the intrinsics in them.)
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
         c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  if (load) {
    c00 = _mm256_loadu_ps(c), c01 = _mm256_loadu_ps(c + 8);
    c10 = _mm256_loadu_ps(c + ldc), c11 = _mm256_loadu_ps(c + ldc + 8);
    c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
    c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
    c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
    c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
  }
  for (int k = 0; k < kc; k++, a += kMr, b += kNr) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 ar = _mm256_broadcast_ss(a);
    c00 = _mm256_fmadd_ps(ar, b0, c00), c01 = _mm256_fmadd_ps(ar, b1, c01);
    ar = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(ar, b0, c10), c11 = _mm256_fmadd_ps(ar, b1, c11);
    ar = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(ar, b0, c20), c21 = _mm256_fmadd_ps(ar, b1, c21);
    ar = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(ar, b0, c30), c31 = _mm256_fmadd_ps(ar, b1, c31);
    ar = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(ar, b0, c40), c41 = _mm256_fmadd_ps(ar, b1, c41);
    ar = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(ar, b0, c50), c51 = _mm256_fmadd_ps(ar, b1, c51);
  }
  _mm256_storeu_ps(c, c00), _mm256_storeu_ps(c + 8, c01);
  _mm256_storeu_ps(c + ldc, c10), _mm256_storeu_ps(c + ldc + 8, c11);
  _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
  _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
  _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
  _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}
#endif

template <typename F>
void tile_kernel(GemmIsa isa, int kc, const F* a, const F* b, F* c, int ldc, bool load) {
#if defined(__x86_64__)
  if constexpr (std::is_same_v<F, float>) {
    if (isa == GemmIsa::avx512) return tile_kernel_avx512(kc, a, b, c, ldc, load);
    if (isa == GemmIsa::avx2) {
      for (int half = 0; half < kNr; half += 16) tile_kernel_avx2(kc, a, b + half, c + half, ldc, load);
      return;
    }
  }
#endif
  tile_kernel_generic(kc, a, b, c, ldc, load);
}

// The tile of C at (i, j), rows and cols of it inside C: a whole tile in place, an edge tile
// through a scratch tile (its elements past C start from zero and are dropped).
template <typename F>
void update_tile(GemmIsa isa, int kc, const F* a, const F* b, F* C, int ldc, int i, int j, int rows, int cols,
                 bool load) {
  F* c = C + static_cast<size_t>(i) * ldc + j;
  if (rows == kMr && cols == kNr) return tile_kernel(isa, kc, a, b, c, ldc, load);
  F edge[kMr * kNr] = {};
  for (int r = 0; r < rows; r++)
    for (int q = 0; q < cols; q++) edge[r * kNr + q] = load ? c[r * ldc + q] : F(0);
  tile_kernel(isa, kc, a, b, edge, kNr, true);
  for (int r = 0; r < rows; r++)
    for (int q = 0; q < cols; q++) c[r * ldc + q] = edge[r * kNr + q];
}

// Packing buffers kept between calls (a step makes hundreds of products of a few shapes): the B
// panel is the calling thread's and shared by its team, each A block its own thread's.
template <typename F>
F* scratch(std::vector<F>& buffer, size_t n) {
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

}  // namespace

std::vector<GemmIsa> available_gemm_isas() {
  std::vector<GemmIsa> isas{GemmIsa::generic};
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isas.push_back(GemmIsa::avx2);
  if (__builtin_cpu_supports("avx512f")) isas.push_back(GemmIsa::avx512);
#endif
  return isas;
}

template <typename F>
void ordered_gemm(bool trans_a, bool trans_b, int M, int N, int K, const F* A, int lda, const F* B, int ldb,
                  bool accumulate, F* C, int ldc) {
  static const GemmIsa best = available_gemm_isas().back();
  ordered_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, accumulate, C, ldc, best);
}

template <typename F>
void ordered_gemm(bool trans_a, bool trans_b, int M, int N, int K, const F* A, int lda, const F* B, int ldb,
                  bool accumulate, F* C, int ldc, GemmIsa isa) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate)
      for (int i = 0; i < M; i++) std::fill_n(C + static_cast<size_t>(i) * ldc, N, F(0));
    return;
  }
  const Operand<F> a{A, lda, trans_a}, b{B, ldb, trans_b};
  thread_local std::vector<F> panel_buffer;
  F* const panel = scratch(panel_buffer, static_cast<size_t>(kKc) * ceil_div(std::min(N, kNc), kNr) * kNr);
  // Work shares: blocks of at most kMc rows, as many as a multiple of the threads (11 blocks on
  // 2 threads left one idle for a twelfth of the product); when M is too small for a block per
  // thread, column groups of each block as well (each share packs its own rows of A).
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const int blocks_wanted = ceil_div(ceil_div(M, kMc), threads) * threads;
  const int mc = std::min(kMc, ceil_div(ceil_div(M, blocks_wanted), kMr) * kMr);
  const int row_blocks = ceil_div(M, mc);
  const int col_groups = ceil_div(threads, row_blocks);
#pragma omp parallel num_threads(threads)
  {
    thread_local std::vector<F> block_buffer;
    F* const block = scratch(block_buffer, static_cast<size_t>(kMc) * kKc);
    for (int j0 = 0; j0 < N; j0 += kNc) {
      const int nc = std::min(kNc, N - j0), strips = ceil_div(nc, kNr);
      for (int k0 = 0; k0 < K; k0 += kKc) {
        const int kc = std::min(kKc, K - k0);
        const bool load = accumulate || k0 > 0;  // later panels continue the chains held in C
#pragma omp for schedule(static)
        for (int s = 0; s < strips; s++) pack_b_strip(panel + static_cast<size_t>(s) * kc * kNr, b, N, j0, s, k0, kc);
        // (the barrier: every strip packed before any is read, every share done before the next
        // panel overwrites this one)
#pragma omp for schedule(dynamic)
        for (int share = 0; share < row_blocks * col_groups; share++) {
          const int i0 = share / col_groups * mc, rows = std::min(mc, M - i0);
          const int group = share % col_groups;
          pack_a(block, a, M, i0, rows, k0, kc);
          for (int s = strips * group / col_groups; s < strips * (group + 1) / col_groups; s++) {
            const F* b_strip = panel + static_cast<size_t>(s) * kc * kNr;
            const int j = j0 + s * kNr, cols = std::min(kNr, N - j);
            for (int r0 = 0; r0 < rows; r0 += kMr)
              update_tile(isa, kc, block + static_cast<size_t>(r0) * kc, b_strip, C, ldc, i0 + r0, j,
                          std::min(kMr, rows - r0), cols, load);
          }
        }
      }
    }
  }
}

#define ETH_INSTANTIATE(F)                                                                                      \
  template void ordered_gemm<F>(bool, bool, int, int, int, const F*, int, const F*, int, bool, F*, int);           \
  template void ordered_gemm<F>(bool, bool, int, int, int, const F*, int, const F*, int, bool, F*, int, GemmIsa);
ETH_INSTANTIATE(float)
ETH_INSTANTIATE(double)
#undef ETH_INSTANTIATE

}  // namespace eth::kernels::cpu

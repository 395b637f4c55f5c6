// The CPU backend's ordered GEMM (kernels/cpu/ordered_gemm.hpp): every element of C is one chain
// of fused multiply-adds over k in order, so it equals, bit for bit, the plain loop that computes
// that chain, whatever the shape, the transposes, the tile an element falls in, the tile's
// instructions (each this processor runs), the number of threads, and however the K terms are
// split among accumulating calls; and the matmul ops built on it give each row of a micro-batch
// the same bits whatever the micro-batch. Outputs are poisoned with NaN before each product;
// inputs are random normals, never zero.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/gpt_ops.hpp"
#include "kernels/cpu/ordered_gemm.hpp"

namespace eth::test {
namespace {

using kernels::cpu::GemmIsa;
using kernels::cpu::ordered_gemm;

const char* isa_name(GemmIsa isa) {
  return isa == GemmIsa::avx512 ? "avx512" : isa == GemmIsa::avx2 ? "avx2" : "generic";
}

template <typename F>
std::vector<F> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<F> normal(F(0), F(1));
  std::vector<F> v(n);
  for (F& x : v) x = normal(rng);
  return v;
}

// The chain itself, one element at a time: op(A) (M, K), op(B) (K, N), C (M, N), all packed.
template <typename F>
std::vector<F> chain_reference(bool ta, bool tb, int M, int N, int K, const std::vector<F>& A, const std::vector<F>& B,
                               const std::vector<F>* start) {
  std::vector<F> C(static_cast<size_t>(M) * N);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      F c = start ? (*start)[static_cast<size_t>(i) * N + j] : F(0);
      for (int k = 0; k < K; k++) {
        const F a = ta ? A[static_cast<size_t>(k) * M + i] : A[static_cast<size_t>(i) * K + k];
        const F b = tb ? B[static_cast<size_t>(j) * K + k] : B[static_cast<size_t>(k) * N + j];
        c = std::fma(a, b, c);
      }
      C[static_cast<size_t>(i) * N + j] = c;
    }
  return C;
}

// The first index where two arrays differ in their bits, or -1.
template <typename F>
long first_difference(const std::vector<F>& x, const std::vector<F>& y) {
  for (size_t i = 0; i < x.size(); i++)
    if (std::memcmp(&x[i], &y[i], sizeof(F)) != 0) return static_cast<long>(i);
  return -1;
}

template <typename F>
void expect_chain(GemmIsa isa, bool ta, bool tb, int M, int N, int K, bool accumulate) {
  const auto A = random_values<F>(static_cast<size_t>(M) * K, 1 + M);
  const auto B = random_values<F>(static_cast<size_t>(K) * N, 2 + N);
  const auto start = random_values<F>(static_cast<size_t>(M) * N, 3 + K);
  const auto want = chain_reference(ta, tb, M, N, K, A, B, accumulate ? &start : nullptr);
  std::vector<F> C = accumulate ? start : std::vector<F>(start.size(), std::numeric_limits<F>::quiet_NaN());
  ordered_gemm<F>(ta, tb, M, N, K, A.data(), ta ? M : K, B.data(), tb ? K : N, accumulate, C.data(), N, isa);
  const long at = first_difference(C, want);
  EXPECT_EQ(at, -1) << isa_name(isa) << " ta " << ta << " tb " << tb << " M " << M << " N " << N << " K " << K << " accumulate "
                    << accumulate << ": element " << at << " is " << (at < 0 ? 0 : C[at]) << ", the chain gives "
                    << (at < 0 ? 0 : want[at]);
}

TEST(OrderedGemm, EveryElementIsItsChain) {
  // Shapes off every block size: edge tiles in rows (6) and columns (32, and AVX2's halves of
  // 16), K past one panel (768) and not a multiple of it, M past one block (72), N past one B
  // panel (2048).
  const int shapes[][3] = {{1, 1, 1}, {5, 17, 3}, {6, 32, 768}, {13, 40, 769}, {97, 33, 1600}, {200, 70, 64},
                           {7, 2100, 20}};
  const std::vector<GemmIsa> isas = kernels::cpu::available_gemm_isas();
  std::printf("tile instructions on this processor:");
  for (GemmIsa isa : isas) std::printf(" %s", isa_name(isa));
  std::printf("\n");
  for (const auto& s : shapes)
    for (int t = 0; t < 4; t++)
      for (bool accumulate : {false, true}) {
        for (GemmIsa isa : isas) expect_chain<float>(isa, t & 1, t & 2, s[0], s[1], s[2], accumulate);
        expect_chain<double>(GemmIsa::generic, t & 1, t & 2, s[0], s[1], s[2], accumulate);
      }
}

TEST(OrderedGemm, ThreadsChangeNoBit) {
  const int M = 150, N = 300, K = 520;
  const auto A = random_values<float>(static_cast<size_t>(M) * K, 4);
  const auto B = random_values<float>(static_cast<size_t>(N) * K, 5);
  std::vector<std::vector<float>> C;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    C.emplace_back(static_cast<size_t>(M) * N, std::numeric_limits<float>::quiet_NaN());
    ordered_gemm<float>(false, true, M, N, K, A.data(), K, B.data(), K, false, C.back().data(), N);
  }
  omp_set_num_threads(1);
  EXPECT_EQ(first_difference(C[0], C[1]), -1);
  EXPECT_EQ(first_difference(C[0], C[2]), -1);
}

// The weight gradient's product, dW (OC, C) += dout^T (OC, N) @ inp (N, C), over 12 rows at once
// and over micro-batches of 5, 4 and 3 rows: the same bits.
TEST(OrderedGemm, AccumulatingCallsEqualOneCall) {
  const int N = 12, C = 40, OC = 24;
  const auto dout = random_values<float>(static_cast<size_t>(N) * OC, 6);
  const auto inp = random_values<float>(static_cast<size_t>(N) * C, 7);
  const auto start = random_values<float>(static_cast<size_t>(OC) * C, 8);
  auto once = start, split = start;
  ordered_gemm<float>(true, false, OC, C, N, dout.data(), OC, inp.data(), C, true, once.data(), C);
  for (int r0 = 0; int rows : {5, 4, 3}) {
    ordered_gemm<float>(true, false, OC, C, rows, dout.data() + r0 * OC, OC, inp.data() + r0 * C, C, true,
                        split.data(), C);
    r0 += rows;
  }
  EXPECT_EQ(first_difference(once, split), -1);
}

// The matmul ops on a micro-batch of 8 rows and on its rows 3-7 alone: forward's outputs and
// backward's dinp of those rows have the same bits, and the weight and bias gradients of rows 0-2
// then 3-7 equal those of all 8 in one call.
TEST(OrderedGemm, MatmulRowsDoNotDependOnTheMicroBatch) {
  const int N = 8, C = 48, OC = 80, split = 3;
  const auto inp = random_values<float>(static_cast<size_t>(N) * C, 9);
  const auto weight = random_values<float>(static_cast<size_t>(OC) * C, 10);
  const auto bias = random_values<float>(OC, 11);
  const auto dout = random_values<float>(static_cast<size_t>(N) * OC, 12);
  const float nan = std::numeric_limits<float>::quiet_NaN();

  std::vector<float> out_all(static_cast<size_t>(N) * OC, nan), out_part((N - split) * OC, nan);
  kernels::cpu::matmul_forward(out_all.data(), inp.data(), weight.data(), bias.data(), N, C, OC);
  kernels::cpu::matmul_forward(out_part.data(), inp.data() + split * C, weight.data(), bias.data(), N - split, C, OC);
  EXPECT_EQ(first_difference(std::vector<float>(out_all.begin() + split * OC, out_all.end()), out_part), -1);

  std::vector<float> dinp_all(static_cast<size_t>(N) * C, nan), dinp_parts(dinp_all.size(), nan);
  std::vector<float> dw_all(static_cast<size_t>(OC) * C, 0.5f), dw_parts = dw_all, db_all(OC, 0.25f), db_parts = db_all;
  kernels::cpu::matmul_backward(dinp_all.data(), dw_all.data(), db_all.data(), dout.data(), inp.data(), weight.data(),
                                N, C, OC);
  for (int r0 : {0, split}) {
    const int rows = r0 == 0 ? split : N - split;
    kernels::cpu::matmul_backward(dinp_parts.data() + r0 * C, dw_parts.data(), db_parts.data(), dout.data() + r0 * OC,
                                  inp.data() + r0 * C, weight.data(), rows, C, OC);
  }
  EXPECT_EQ(first_difference(dinp_all, dinp_parts), -1);
  EXPECT_EQ(first_difference(dw_all, dw_parts), -1);
  EXPECT_EQ(first_difference(db_all, db_parts), -1);
}

}  // namespace
}  // namespace eth::test

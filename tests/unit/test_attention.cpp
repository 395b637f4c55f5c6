// Both CPU attention kernels, blocked (kernels/cpu/flash_attention.cpp) and materialised
// (kernels/cpu/materialised_attention.cpp), against float64 references, on random non-zero data,
// with every output poisoned (NaN) before the kernel writes it; and the CPU backend's choice
// between them by T (kernels/attention_path.hpp). Sequence lengths cover one row, a partial
// tile, exactly one tile (64) and several tiles with a partial last one.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <type_traits>

#include "kernels/backend.hpp"
#include "kernels/cpu/attention.hpp"
#include "tests/unit/gradcheck.hpp"

namespace eth::test {
namespace {

namespace ops = eth::kernels::cpu;
using kernels::AttentionPath;
constexpr AttentionPath kPaths[] = {AttentionPath::blocked, AttentionPath::materialised};

std::string name(AttentionPath p) { return p == AttentionPath::blocked ? "blocked" : "materialised"; }
using Vec = std::vector<double>;
using FVec = std::vector<float>;

Vec to_double(const FVec& v) { return Vec(v.begin(), v.end()); }

// The causal softmax of the scaled scores q.k/sqrt(hs), in double, written independently of
// both kernels: each row's log-sum-exp (what the blocked path keeps) and its probabilities
// (B, NH, T, T), zero above the diagonal (what the materialised path keeps).
struct Softmax {
  Vec lse, probabilities;
};
Softmax reference_softmax(const Vec& qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  Softmax r{Vec(static_cast<size_t>(B) * NH * T), Vec(static_cast<size_t>(B) * NH * T * T, 0.0)};
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++)
      for (int t = 0; t < T; t++) {
        const double* q = &qkv[(static_cast<size_t>(b) * T + t) * 3 * C + h * hs];
        std::vector<double> s(static_cast<size_t>(t) + 1);
        double m = -INFINITY, sum = 0;
        for (int j = 0; j <= t; j++) {
          const double* k = &qkv[(static_cast<size_t>(b) * T + j) * 3 * C + C + h * hs];
          s[j] = 0;
          for (int d = 0; d < hs; d++) s[j] += q[d] * k[d];
          s[j] /= std::sqrt(static_cast<double>(hs));
          m = std::max(m, s[j]);
        }
        for (double x : s) sum += std::exp(x - m);
        const size_t row = (static_cast<size_t>(b) * NH + h) * T + t;
        r.lse[row] = m + std::log(sum);
        for (int j = 0; j <= t; j++) r.probabilities[row * T + j] = std::exp(s[j] - r.lse[row]);
      }
  return r;
}

// What `path` keeps for backward, from the reference.
const Vec& reference_saved(const Softmax& ref, AttentionPath path) {
  return path == AttentionPath::materialised ? ref.probabilities : ref.lse;
}

struct Shape {
  int B, T, C, NH;
};
void PrintTo(const Shape& s, std::ostream* os) { *os << "B " << s.B << " T " << s.T << " C " << s.C << " NH " << s.NH; }

class Attention : public ::testing::TestWithParam<Shape> {};

// fp32 against float64. Each output is a softmax-weighted mean (forward) or a sum of at most T
// products (backward) of O(1) values, every one rounded to fp32 (unit roundoff 6e-8), with
// exponentials within about 1e-7 relative (the blocked kernels' polynomial, libm's expf in the
// materialised ones): the norm-wise error is a few 1e-7 for T <= 200 (seen: out 2e-7, dqkv 1e-6
// and below). 1e-5 leaves that margin, while a wrong mask, tile edge or rescaling shows at 1e-2
// or more.
constexpr double kFp32Tolerance = 1e-5;

// Random non-zero inputs, the materialised double kernels' results (the reference the finite-
// difference test of test_ops_gradcheck.cpp checks), and one path's results in F, every output
// poisoned before the kernels write it. With a backend (float only), the backend runs and
// chooses the path; `path` is then what it is expected to choose.
template <typename F>
struct AttentionRun {
  Vec qkv, dout, ref_out, ref_dqkv;  // double
  std::vector<F> out, saved, dqkv;   // the path's
  AttentionRun(const Shape& s, uint64_t seed, AttentionPath path, kernels::Backend* backend = nullptr) {
    const auto [B, T, C, NH] = s;
    const size_t BTC = static_cast<size_t>(B) * T * C;
    qkv = random_vector(3 * BTC, seed, 2.0), dout = random_vector(BTC, seed + 1);
    ref_out.resize(BTC), ref_dqkv.resize(3 * BTC);
    Vec att(static_cast<size_t>(B) * NH * T * T);
    ops::materialised_attention_forward(ref_out.data(), att.data(), qkv.data(), B, T, eth::kernels::AttentionHeads::multi_head(C, NH));
    ops::materialised_attention_backward(ref_dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, eth::kernels::AttentionHeads::multi_head(C, NH));

    const std::vector<F> q(qkv.begin(), qkv.end()), d(dout.begin(), dout.end());
    out.resize(BTC), saved.resize(kernels::attention_saved_floats(path, B, NH, T)), dqkv.resize(3 * BTC);
    poison(out), poison(saved), poison(dqkv);
    if constexpr (std::is_same_v<F, float>) {
      if (backend != nullptr) {
        backend->attention_forward(out.data(), saved.data(), q.data(), B, T, kernels::AttentionHeads::multi_head(C, NH));
        backend->attention_backward(dqkv.data(), d.data(), q.data(), out.data(), saved.data(), B, T, kernels::AttentionHeads::multi_head(C, NH));
        return;
      }
    }
    ops::attention_forward(path, out.data(), saved.data(), q.data(), B, T, kernels::AttentionHeads::multi_head(C, NH));
    ops::attention_backward(path, dqkv.data(), d.data(), q.data(), out.data(), saved.data(), B, T, kernels::AttentionHeads::multi_head(C, NH));
  }
};

TEST_P(Attention, MatchesFloat64Reference) {
  const auto [B, T, C, NH] = GetParam();
  for (AttentionPath path : kPaths) {
    SCOPED_TRACE(name(path));
    const AttentionRun<float> run(GetParam(), 60, path);
    expect_close("out", to_double(run.out), run.ref_out, kFp32Tolerance);
    const Softmax ref = reference_softmax(run.qkv, B, T, C, NH);
    expect_close("saved", to_double(run.saved), reference_saved(ref, path), kFp32Tolerance);
    expect_close("dqkv", to_double(run.dqkv), run.ref_dqkv, kFp32Tolerance);
  }
}

// In double the blocked algorithm is the materialised one up to summation order: any
// disagreement beyond rounding (1e-16 per operation, sums of at most T terms) is a bug. The
// materialised double kernel is checked against the independent reference softmax the same way.
TEST_P(Attention, EqualsMaterialisedInDouble) {
  const auto [B, T, C, NH] = GetParam();
  const AttentionRun<double> blocked(GetParam(), 62, AttentionPath::blocked);
  expect_close("out", blocked.out, blocked.ref_out, 1e-12);
  expect_close("dqkv", blocked.dqkv, blocked.ref_dqkv, 1e-12);
  const AttentionRun<double> materialised(GetParam(), 62, AttentionPath::materialised);
  expect_close("probabilities", materialised.saved, reference_softmax(materialised.qkv, B, T, C, NH).probabilities,
               1e-12);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Attention,
                         ::testing::Values(Shape{2, 1, 48, 3},      // one row: sees only itself
                                           Shape{2, 37, 48, 3},     // one partial tile, hs 16
                                           Shape{1, 64, 128, 2},    // exactly one tile, hs 64
                                           Shape{2, 150, 128, 2},   // 3 tiles, the last of 22 rows
                                           Shape{1, 200, 96, 4}),   // 4 tiles, hs 24
                         [](const auto& info) {
                           const Shape& s = info.param;
                           return "B" + std::to_string(s.B) + "_T" + std::to_string(s.T) + "_C" +
                                  std::to_string(s.C) + "_NH" + std::to_string(s.NH);
                         });

// The CPU backend runs the materialised kernels below kCpuMaterialisedBelowT and the blocked ones
// from it on: it says so (attention_path, and the saved floats its caller must allocate), and
// what its forward leaves in `saved` is the probabilities at a short T and lse at a long one, with
// outputs and gradients as accurate as the kernels' own (a backward that read the other path's
// state would be off by far more than the tolerance).
TEST(CpuBackend, ChoosesAttentionByT) {
  constexpr int kBelow = kernels::kCpuMaterialisedBelowT;
  ASSERT_GT(kBelow, 16) << "a short sequence should run the materialised kernels";
  ASSERT_LT(kBelow, 300) << "a long sequence should run the blocked kernels";
  auto backend = kernels::make_cpu_backend();
  const int B = 2, C = 48, NH = 3;
  for (int T : {16, kBelow - 1, kBelow, 300}) {
    const AttentionPath expected = T < kBelow ? AttentionPath::materialised : AttentionPath::blocked;
    SCOPED_TRACE("T " + std::to_string(T) + ", expected " + name(expected));
    EXPECT_EQ(backend->attention_path(T), expected);
    EXPECT_EQ(backend->attention_saved_floats(B, NH, T),
              static_cast<size_t>(B) * NH * T * (expected == AttentionPath::materialised ? T : 1));
    const AttentionRun<float> run({B, T, C, NH}, 66, expected, backend.get());
    expect_close("out", to_double(run.out), run.ref_out, kFp32Tolerance);
    expect_close("saved", to_double(run.saved), reference_saved(reference_softmax(run.qkv, B, T, C, NH), expected),
                 kFp32Tolerance);
    expect_close("dqkv", to_double(run.dqkv), run.ref_dqkv, kFp32Tolerance);
  }
}

// The blocked backward against finite differences of the blocked forward, across tile edges
// (T = 70: a full tile and a partial one).
TEST(GradCheck, FlashAttention) {
  const int B = 1, T = 70, C = 8, NH = 2;
  Vec qkv = random_vector(B * T * 3 * C, 64, 1.5);
  const Vec w = random_vector(B * T * C, 65);
  Vec out(B * T * C), lse(B * NH * T);
  auto loss = [&] {
    poison(out), poison(lse);
    ops::flash_attention_forward(out.data(), lse.data(), qkv.data(), B, T, eth::kernels::AttentionHeads::multi_head(C, NH));
    return dot(w, out);
  };
  loss();
  Vec dqkv(qkv.size());
  poison(dqkv);
  ops::flash_attention_backward(dqkv.data(), w.data(), qkv.data(), out.data(), lse.data(), B, T, eth::kernels::AttentionHeads::multi_head(C, NH));
  expect_close("dqkv", dqkv, numeric_gradient(qkv, loss), kGradTolerance);
}

}  // namespace
}  // namespace eth::test

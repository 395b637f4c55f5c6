// The blocked attention (kernels/cpu/flash_attention.cpp, what the backends run) against the
// materialised float64 reference (kernels/cpu/gpt_ops.cpp), on random non-zero data, with every
// output poisoned (NaN) before the kernel writes it. Sequence lengths cover one row, a partial
// tile, exactly one tile (64) and several tiles with a partial last one.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu/gpt_ops.hpp"
#include "tests/unit/gradcheck.hpp"

namespace eth::test {
namespace {

namespace ops = eth::kernels::cpu;
using Vec = std::vector<double>;
using FVec = std::vector<float>;

Vec to_double(const FVec& v) { return Vec(v.begin(), v.end()); }

// Each row's log-sum-exp of its scaled causal scores, in double: what lse must hold.
Vec reference_lse(const Vec& qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  Vec lse(static_cast<size_t>(B) * NH * T);
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
        lse[(static_cast<size_t>(b) * NH + h) * T + t] = m + std::log(sum);
      }
  return lse;
}

struct Shape {
  int B, T, C, NH;
};
void PrintTo(const Shape& s, std::ostream* os) { *os << "B " << s.B << " T " << s.T << " C " << s.C << " NH " << s.NH; }

class FlashAttention : public ::testing::TestWithParam<Shape> {};

// fp32 against float64. Each output is a softmax-weighted mean (forward) or a sum of at most T
// products (backward) of O(1) values, every one rounded to fp32 (unit roundoff 6e-8), with
// exponentials from a polynomial within about 1e-7 relative: the norm-wise error is a few 1e-7
// for T <= 200 (seen: out 2e-7, dqkv 1e-6 and below). 1e-5 leaves that margin, while a wrong
// mask, tile edge or rescaling shows at 1e-2 or more.
constexpr double kFp32Tolerance = 1e-5;

// Random non-zero inputs, the materialised reference's results in double, and the blocked
// kernels' results in F, every output poisoned before they write it.
template <typename F>
struct AttentionRun {
  Vec qkv, dout, ref_out, ref_dqkv;  // double
  std::vector<F> out, lse, dqkv;     // the blocked kernels'
  AttentionRun(const Shape& s, uint64_t seed) {
    const auto [B, T, C, NH] = s;
    const size_t BTC = static_cast<size_t>(B) * T * C;
    qkv = random_vector(3 * BTC, seed, 2.0), dout = random_vector(BTC, seed + 1);
    ref_out.resize(BTC), ref_dqkv.resize(3 * BTC);
    Vec att(static_cast<size_t>(B) * NH * T * T), datt(att.size());
    ops::attention_forward(ref_out.data(), att.data(), qkv.data(), B, T, C, NH);
    ops::attention_backward(ref_dqkv.data(), datt.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);

    const std::vector<F> q(qkv.begin(), qkv.end()), d(dout.begin(), dout.end());
    out.resize(BTC), lse.resize(static_cast<size_t>(B) * NH * T), dqkv.resize(3 * BTC);
    poison(out), poison(lse), poison(dqkv);
    ops::flash_attention_forward(out.data(), lse.data(), q.data(), B, T, C, NH);
    ops::flash_attention_backward(dqkv.data(), d.data(), q.data(), out.data(), lse.data(), B, T, C, NH);
  }
};

TEST_P(FlashAttention, MatchesFloat64Reference) {
  const auto [B, T, C, NH] = GetParam();
  const AttentionRun<float> run(GetParam(), 60);
  expect_close("out", to_double(run.out), run.ref_out, kFp32Tolerance);
  expect_close("lse", to_double(run.lse), reference_lse(run.qkv, B, T, C, NH), kFp32Tolerance);
  expect_close("dqkv", to_double(run.dqkv), run.ref_dqkv, kFp32Tolerance);
}

// In double the blocked algorithm is the materialised one up to summation order: any
// disagreement beyond rounding (1e-16 per operation, sums of at most T terms) is a bug.
TEST_P(FlashAttention, EqualsMaterialisedInDouble) {
  const AttentionRun<double> run(GetParam(), 62);
  expect_close("out", run.out, run.ref_out, 1e-12);
  expect_close("dqkv", run.dqkv, run.ref_dqkv, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashAttention,
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

// The blocked backward against finite differences of the blocked forward, across tile edges
// (T = 70: a full tile and a partial one).
TEST(GradCheck, FlashAttention) {
  const int B = 1, T = 70, C = 8, NH = 2;
  Vec qkv = random_vector(B * T * 3 * C, 64, 1.5);
  const Vec w = random_vector(B * T * C, 65);
  Vec out(B * T * C), lse(B * NH * T);
  auto loss = [&] {
    poison(out), poison(lse);
    ops::flash_attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH);
    return dot(w, out);
  };
  loss();
  Vec dqkv(qkv.size());
  poison(dqkv);
  ops::flash_attention_backward(dqkv.data(), w.data(), qkv.data(), out.data(), lse.data(), B, T, C, NH);
  expect_close("dqkv", dqkv, numeric_gradient(qkv, loss), kGradTolerance);
}

}  // namespace
}  // namespace eth::test

// Every op's backward against central finite differences of its forward, in double precision,
// on tiny shapes. The scalar loss is a random weighting of the op's output, sum(w * out), so
// its gradient with respect to the output is w, which is what each backward receives.
#include <gtest/gtest.h>

#include "kernels/cpu/gpt_ops.hpp"
#include "tests/unit/gradcheck.hpp"

namespace eth::test {
namespace {

namespace ops = eth::kernels::cpu;
using Vec = std::vector<double>;

TEST(GradCheck, Encoder) {
  const int B = 2, T = 3, C = 4, Vp = 6, maxT = 5;
  const std::vector<int32_t> tokens = {1, 4, 1, 0, 5, 4};  // repeats on purpose
  Vec wte = random_vector(Vp * C, 1), wpe = random_vector(maxT * C, 2);
  const Vec w = random_vector(B * T * C, 3);
  Vec out(B * T * C);
  auto loss = [&] {
    poison(out);
    ops::encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    return dot(w, out);
  };
  const Vec dwte0 = random_vector(wte.size(), 4), dwpe0 = random_vector(wpe.size(), 5);
  Vec dwte = dwte0, dwpe = dwpe0;
  ops::encoder_backward(dwte.data(), dwpe.data(), w.data(), tokens.data(), B, T, C);
  expect_close("dwte", accumulated_minus_start(dwte, dwte0), numeric_gradient(wte, loss), kGradTolerance);
  expect_close("dwpe", accumulated_minus_start(dwpe, dwpe0), numeric_gradient(wpe, loss), kGradTolerance);
}

TEST(GradCheck, LayerNorm) {
  const int N = 5, C = 7;
  Vec inp = random_vector(N * C, 10, 2.0), weight = random_vector(C, 11), bias = random_vector(C, 12);
  const Vec w = random_vector(N * C, 13);
  Vec out(N * C), mean(N), rstd(N);
  auto loss = [&] {
    poison(out), poison(mean), poison(rstd);
    ops::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C);
    return dot(w, out);
  };
  loss();
  const Vec dinp0 = random_vector(inp.size(), 14), dw0 = random_vector(C, 15), db0 = random_vector(C, 16);
  Vec dinp = dinp0, dw = dw0, db = db0;
  ops::layernorm_backward(dinp.data(), dw.data(), db.data(), w.data(), inp.data(), weight.data(), mean.data(),
                          rstd.data(), N, C);
  expect_close("dinp", accumulated_minus_start(dinp, dinp0), numeric_gradient(inp, loss), kGradTolerance);
  expect_close("dweight", accumulated_minus_start(dw, dw0), numeric_gradient(weight, loss), kGradTolerance);
  expect_close("dbias", accumulated_minus_start(db, db0), numeric_gradient(bias, loss), kGradTolerance);
}

TEST(GradCheck, Matmul) {
  const int N = 6, C = 5, OC = 3;
  Vec inp = random_vector(N * C, 20), weight = random_vector(OC * C, 21), bias = random_vector(OC, 22);
  const Vec w = random_vector(N * OC, 23);
  Vec out(N * OC);
  auto loss = [&] {
    poison(out);
    ops::matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), N, C, OC);
    return dot(w, out);
  };
  Vec dinp(inp.size());
  poison(dinp);  // overwritten, not accumulated
  const Vec dw0 = random_vector(weight.size(), 24), db0 = random_vector(OC, 25);
  Vec dw = dw0, db = db0;
  ops::matmul_backward(dinp.data(), dw.data(), db.data(), w.data(), inp.data(), weight.data(), N, C, OC);
  expect_close("dinp", dinp, numeric_gradient(inp, loss), kGradTolerance);
  expect_close("dweight", accumulated_minus_start(dw, dw0), numeric_gradient(weight, loss), kGradTolerance);
  expect_close("dbias", accumulated_minus_start(db, db0), numeric_gradient(bias, loss), kGradTolerance);
}

TEST(GradCheck, MatmulWithoutBias) {
  const int N = 4, C = 3, OC = 5;
  Vec inp = random_vector(N * C, 30), weight = random_vector(OC * C, 31);
  const Vec w = random_vector(N * OC, 32);
  Vec out(N * OC);
  auto loss = [&] {
    poison(out);
    ops::matmul_forward(out.data(), inp.data(), weight.data(), static_cast<const double*>(nullptr), N, C, OC);
    return dot(w, out);
  };
  Vec dinp(inp.size()), dw(weight.size(), 0.0);
  poison(dinp);
  ops::matmul_backward(dinp.data(), dw.data(), static_cast<double*>(nullptr), w.data(), inp.data(),
                       weight.data(), N, C, OC);
  expect_close("dinp", dinp, numeric_gradient(inp, loss), kGradTolerance);
  expect_close("dweight", dw, numeric_gradient(weight, loss), kGradTolerance);
}

TEST(GradCheck, CausalAttention) {
  const int B = 2, T = 5, C = 8, NH = 2;
  Vec qkv = random_vector(B * T * 3 * C, 40, 1.5);
  const Vec w = random_vector(B * T * C, 41);
  Vec out(B * T * C), att(B * NH * T * T);
  auto loss = [&] {
    poison(out), poison(att);
    ops::materialised_attention_forward(out.data(), att.data(), qkv.data(), B, T, eth::kernels::AttentionHeads::multi_head(C, NH));
    return dot(w, out);
  };
  loss();
  Vec dqkv(qkv.size());
  poison(dqkv);
  ops::materialised_attention_backward(dqkv.data(), w.data(), qkv.data(), att.data(), B, T, eth::kernels::AttentionHeads::multi_head(C, NH));
  expect_close("dqkv", dqkv, numeric_gradient(qkv, loss), kGradTolerance);
}

TEST(CausalAttention, RowsAreDistributionsOverThePast) {
  const int B = 1, T = 4, C = 4, NH = 1;
  const Vec qkv = random_vector(B * T * 3 * C, 45, 2.0);
  Vec out(B * T * C), att(T * T);
  poison(out), poison(att);
  ops::materialised_attention_forward(out.data(), att.data(), qkv.data(), B, T, eth::kernels::AttentionHeads::multi_head(C, NH));
  for (int t = 0; t < T; t++) {
    double sum = 0.0;
    for (int j = 0; j < T; j++) {
      if (j > t) {
        EXPECT_EQ(att[t * T + j], 0.0) << "row " << t << " attends to future position " << j;
      }
      sum += att[t * T + j];
    }
    EXPECT_NEAR(sum, 1.0, 1e-12) << "row " << t;
  }
  // Position 0 sees only itself: its output is exactly its value vector.
  for (int c = 0; c < C; c++) EXPECT_NEAR(out[c], qkv[2 * C + c], 1e-12);
}

TEST(GradCheck, Gelu) {
  const size_t n = 40;
  Vec inp = random_vector(n, 50, 4.0);
  const Vec w = random_vector(n, 51);
  Vec out(n);
  auto loss = [&] {
    poison(out);
    ops::gelu_forward(out.data(), inp.data(), n);
    return dot(w, out);
  };
  Vec dinp(n);
  poison(dinp);
  ops::gelu_backward(dinp.data(), inp.data(), w.data(), n);
  expect_close("dinp", dinp, numeric_gradient(inp, loss), kGradTolerance);
}

TEST(Residual, AddsElementwise) {
  const size_t n = 9;
  const Vec a = random_vector(n, 55), b = random_vector(n, 56);
  Vec out(n);
  poison(out);
  ops::residual_forward(out.data(), a.data(), b.data(), n);
  for (size_t i = 0; i < n; i++) EXPECT_EQ(out[i], a[i] + b[i]);
}

TEST(GradCheck, CrossEntropy) {
  const int B = 3, T = 4, V = 7, Vp = 9;
  Vec logits = random_vector(B * T * Vp, 60, 3.0);
  const std::vector<int32_t> targets = {0, 6, 3, 3, 1, 2, 5, 6, 0, 4, 4, 2};
  Vec losses(B);
  // Loss of the batch: sum over samples of the per-sample mean token loss.
  auto loss = [&] {
    Vec scratch = logits;
    poison(losses);
    ops::crossentropy_forward_backward(losses.data(), scratch.data(), targets.data(), B, T, V, Vp, 0.0);
    EXPECT_EQ(scratch, logits) << "evaluation must leave the logits untouched";
    return losses[0] + losses[1] + losses[2];
  };
  const double scale = 0.75;  // the dlogits scale multiplies the gradient
  Vec dlogits = logits;
  Vec losses_with_grad(B);
  ops::crossentropy_forward_backward(losses_with_grad.data(), dlogits.data(), targets.data(), B, T, V, Vp, scale);
  const double reference_loss = loss();
  EXPECT_NEAR(losses_with_grad[0] + losses_with_grad[1] + losses_with_grad[2], reference_loss, 1e-12);
  Vec numeric = numeric_gradient(logits, loss);
  for (double& g : numeric) g *= scale;
  expect_close("dlogits", dlogits, numeric, kGradTolerance);
  for (int n = 0; n < B * T; n++)
    for (int v = V; v < Vp; v++) EXPECT_EQ(dlogits[n * Vp + v], 0.0) << "padded column " << v << " of row " << n;
}

TEST(AdamW, MatchesTheUpdateFormulaInEverySegment) {
  // Two segments, their moments packed in the other order, one without weight decay: each
  // parameter must take its own moments and its segment's decay.
  const size_t n = 5;
  const std::vector<kernels::AdamWSegment> segments = {{3, 0, 2, 0}, {0, 2, 3, 1}};
  Vec p = random_vector(n, 70), g = random_vector(n, 71), m = random_vector(n, 72, 0.1), v(n);
  for (size_t i = 0; i < n; i++) v[i] = 0.01 + 0.01 * i;
  const double lr = 1e-2, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1, scale = 0.5;
  const int step = 3;
  Vec expected(n);
  for (const kernels::AdamWSegment& s : segments)
    for (size_t j = 0; j < s.size; j++) {
      const size_t i = s.param_offset + j, k = s.moment_offset + j;
      const double gi = g[i] * scale;
      const double mi = b1 * m[k] + (1 - b1) * gi, vi = b2 * v[k] + (1 - b2) * gi * gi;
      const double m_hat = mi / (1 - std::pow(b1, step)), v_hat = vi / (1 - std::pow(b2, step));
      expected[i] = p[i] - lr * (m_hat / (std::sqrt(v_hat) + eps) + (s.decay ? wd : 0.0) * p[i]);
    }
  ops::adamw_update<double, double>(p.data(), nullptr, g.data(), m.data(), v.data(), segments.data(), segments.size(), lr, b1, b2, eps,
                    wd, scale, step);
  expect_close("params", p, expected, 1e-15);
}

TEST(SumOfSquares, IsTheSquaredNorm) {
  const Vec x = random_vector(1001, 80);
  EXPECT_NEAR(ops::sum_of_squares(x.data(), x.size()), dot(x, x), 1e-12);
}

}  // namespace
}  // namespace eth::test

// The Llama family's CPU reference ops (kernels/cpu/llama_ops.hpp) and rotary frequencies
// (lib/model/rotary.hpp): each backward against central finite differences of its forward in
// double (tolerance: tests/unit/gradcheck.hpp), and each forward against values derived by hand
// from transformers' LlamaForCausalLM definitions.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu/gpt_ops.hpp"
#include "kernels/cpu/llama_ops.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/rotary.hpp"
#include "tests/unit/gradcheck.hpp"

namespace eth::test {
namespace {

namespace ops = eth::kernels::cpu;
using Vec = std::vector<double>;

TEST(LlamaGradCheck, RmsNorm) {
  const int N = 5, C = 7;
  const double eps = 1e-5;
  Vec inp = random_vector(N * C, 10, 2.0), weight = random_vector(C, 11);
  const Vec w = random_vector(N * C, 13);
  Vec out(N * C), rstd(N);
  auto loss = [&] {
    poison(out), poison(rstd);
    ops::rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), N, C, eps);
    return dot(w, out);
  };
  loss();
  const Vec dinp0 = random_vector(inp.size(), 14), dw0 = random_vector(C, 15);
  Vec dinp = dinp0, dw = dw0;
  ops::rmsnorm_backward(dinp.data(), dw.data(), w.data(), inp.data(), weight.data(), rstd.data(), N, C);
  expect_close("dinp", accumulated_minus_start(dinp, dinp0), numeric_gradient(inp, loss), kGradTolerance);
  expect_close("dweight", accumulated_minus_start(dw, dw0), numeric_gradient(weight, loss), kGradTolerance);
}

// One row (1, 2, 3, 4, 5), weight (1, 1, 1, 1, 2), eps 1: mean of squares 55 / 5 = 11, rstd
// 1 / sqrt(12); no mean is subtracted (a layernorm would centre the row on 3).
TEST(LlamaOps, RmsNormByHand) {
  const Vec x = {1, 2, 3, 4, 5}, weight = {1, 1, 1, 1, 2};
  Vec out(5), rstd(1);
  ops::rmsnorm_forward(out.data(), rstd.data(), x.data(), weight.data(), 1, 5, 1.0);
  const double r = 1 / std::sqrt(12.0);
  EXPECT_DOUBLE_EQ(rstd[0], r);
  for (int c = 0; c < 5; c++) EXPECT_DOUBLE_EQ(out[c], x[c] * r * weight[c]) << c;
}

TEST(LlamaGradCheck, SwiGlu) {
  const int N = 4, FC = 5;
  Vec inp = random_vector(N * 2 * FC, 20, 3.0);
  const Vec w = random_vector(N * FC, 21);
  Vec out(N * FC);
  auto loss = [&] {
    poison(out);
    ops::swiglu_forward(out.data(), inp.data(), N, FC);
    return dot(w, out);
  };
  Vec dinp(inp.size());
  poison(dinp);  // overwritten
  ops::swiglu_backward(dinp.data(), inp.data(), w.data(), N, FC);
  expect_close("dinp", dinp, numeric_gradient(inp, loss), kGradTolerance);
}

// Gate first, up second: silu(2) * 3 = 2 / (1 + e^-2) * 3.
TEST(LlamaOps, SwiGluTakesGateThenUp) {
  const Vec inp = {2, 3};
  Vec out(1);
  ops::swiglu_forward(out.data(), inp.data(), 1, 1);
  EXPECT_DOUBLE_EQ(out[0], 2 / (1 + std::exp(-2.0)) * 3);
}

// rotary_backward is the transpose of rotary_forward, on q and k of every head (NH 4 query heads,
// NKV 2 key heads), with a position offset; v is untouched either way.
TEST(LlamaGradCheck, Rotary) {
  const int B = 2, T = 3, T0 = 5, NH = 4, NKV = 2, hs = 6, row = (NH + 2 * NKV) * hs;
  const std::vector<float> inv_freq = {1.0f, 0.3f, 0.05f};
  Vec qkv = random_vector(B * T * row, 30);
  const Vec w = random_vector(qkv.size(), 31);
  auto loss = [&] {
    Vec rotated = qkv;
    ops::rotary_forward(rotated.data(), inv_freq.data(), B, T, T0, NH, NKV, hs);
    return dot(w, rotated);
  };
  Vec dqkv = w;
  ops::rotary_backward(dqkv.data(), inv_freq.data(), B, T, T0, NH, NKV, hs);
  expect_close("dqkv", dqkv, numeric_gradient(qkv, loss), kGradTolerance);
  Vec rotated = qkv;
  ops::rotary_forward(rotated.data(), inv_freq.data(), B, T, T0, NH, NKV, hs);
  for (size_t i = 0; i < qkv.size(); i++) {
    if (i % row >= static_cast<size_t>((NH + NKV) * hs)) {
      EXPECT_EQ(rotated[i], qkv[i]) << "v moved at " << i;
    }
  }
}

// transformers' rotate_half: element i of a head turns with element i + hs/2 (not i + 1), by
// the angle position x inv_freq[i]. One head of 4 at position 2 (T0 1, t 1), inv_freq (0.5, 0.25).
TEST(LlamaOps, RotaryTurnsTheFirstHalfAgainstTheSecond) {
  const std::vector<float> inv_freq = {0.5f, 0.25f};
  Vec qkv(2 * 3 * 4);  // T 2 rows of one q, k and v head
  for (size_t i = 0; i < qkv.size(); i++) qkv[i] = 1.0 + i;
  const Vec before = qkv;
  ops::rotary_forward(qkv.data(), inv_freq.data(), 1, 2, 1, 1, 1, 4);
  const double* x = before.data() + 12;  // row t = 1, position 2: its q head
  for (int i = 0; i < 2; i++) {
    const double a = 2 * double(inv_freq[i]), c = double(std::cos(float(a))), s = double(std::sin(float(a)));
    EXPECT_NEAR(qkv[12 + i], x[i] * c - x[i + 2] * s, 1e-12) << i;
    EXPECT_NEAR(qkv[12 + i + 2], x[i + 2] * c + x[i] * s, 1e-12) << i;
  }
}

// theta^(-2i/hs) by hand, and Llama 3's scaling on Llama-3.2-1B's parameters (theta 500000, hs 64,
// factor 32, low 1, high 4, 8192 positions): wavelengths 2 pi / f below 8192 / 4 = 2048 kept
// (i = 0: f = 1), above 8192 divided by 32 (i = 31: 500000^(-62/64) = 3.01386e-6 -> 9.41831e-8),
// between blended: i = 16, f = 500000^(-1/2) = 1.41421e-3, wavelength 4442.88, smooth
// (8192 / 4442.88 - 1) / 3 = 0.281287, f (0.718713 / 32 + 0.281287) = 4.29557e-4.
TEST(LlamaOps, RotaryFrequencies) {
  ModelConfig c;
  c.head_dim = 4;
  c.rope_theta = 10000;
  const std::vector<float> plain = rotary_inverse_frequencies(c);
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(plain[0], 1.0f);
  EXPECT_EQ(plain[1], 0.01f);

  c.head_dim = 64;
  c.rope_theta = 500000;
  c.rope_scaling = {32, 1, 4, 8192};
  const std::vector<float> scaled = rotary_inverse_frequencies(c);
  ASSERT_EQ(scaled.size(), 32u);
  EXPECT_EQ(scaled[0], 1.0f);
  EXPECT_NEAR(scaled[31], 9.41831e-8, 1e-13);
  EXPECT_NEAR(scaled[16], 4.29557e-4, 1e-9);
  EXPECT_NEAR(scaled[14], std::pow(500000.0, -28.0 / 64), 1e-9);  // wavelength 1974 < 2048: kept
}

// ---- grouped-query attention ------------------------------------------------------------------

using kernels::AttentionHeads;

TEST(LlamaGradCheck, GroupedQueryAttention) {
  const int B = 2, T = 5;
  const AttentionHeads heads{4, 2, 3};  // 4 query heads sharing 2 K/V heads of 3 channels
  Vec qkv = random_vector(B * T * heads.qkv_row(), 40, 1.5);
  const Vec w = random_vector(B * T * heads.out_row(), 41);
  Vec out(B * T * heads.out_row()), att(B * heads.NH * T * T);
  auto loss = [&] {
    poison(out), poison(att);
    ops::materialised_attention_forward(out.data(), att.data(), qkv.data(), B, T, heads);
    return dot(w, out);
  };
  loss();
  Vec dqkv(qkv.size());
  poison(dqkv);
  ops::materialised_attention_backward(dqkv.data(), w.data(), qkv.data(), att.data(), B, T, heads);
  expect_close("dqkv", dqkv, numeric_gradient(qkv, loss), kGradTolerance);
}

// transformers' repeat_kv: grouped-query attention is multi-head attention whose K/V heads are
// each repeated for their group (query head h reads K/V head h / group, not h % NKV), and dK,
// dV of a shared head are the sums of the repeated heads' gradients. Blocked (T 130: three key
// tiles) and materialised, in double: equal to rounding (1e-12).
TEST(LlamaOps, GroupedQueryAttentionIsMultiHeadWithRepeatedKeys) {
  const int B = 2, T = 130;
  const AttentionHeads gqa{6, 2, 4}, mha{6, 6, 4};
  const Vec qkv = random_vector(B * T * gqa.qkv_row(), 50, 1.5);
  const Vec dout = random_vector(B * T * gqa.out_row(), 51);
  Vec repeated(B * T * mha.qkv_row());
  for (size_t r = 0; r < size_t(B) * T; r++) {
    const double* x = qkv.data() + r * gqa.qkv_row();
    double* y = repeated.data() + r * mha.qkv_row();
    for (int h = 0; h < mha.NH; h++)
      for (int c = 0; c < 4; c++) {
        y[mha.q(h) + c] = x[gqa.q(h) + c];
        y[mha.k(h) + c] = x[gqa.k(gqa.kv_head(h)) + c];
        y[mha.v(h) + c] = x[gqa.v(gqa.kv_head(h)) + c];
      }
  }
  Vec ref_out(B * T * mha.out_row()), att(B * mha.NH * T * T), ref_dqkv(repeated.size());
  ops::materialised_attention_forward(ref_out.data(), att.data(), repeated.data(), B, T, mha);
  ops::materialised_attention_backward(ref_dqkv.data(), dout.data(), repeated.data(), att.data(), B, T, mha);
  // The reference's gradient folded back: q's as they are, each shared head's the sum of its group's.
  Vec expected(qkv.size(), 0.0);
  for (size_t r = 0; r < size_t(B) * T; r++) {
    const double* y = ref_dqkv.data() + r * mha.qkv_row();
    double* x = expected.data() + r * gqa.qkv_row();
    for (int h = 0; h < mha.NH; h++)
      for (int c = 0; c < 4; c++) {
        x[gqa.q(h) + c] = y[mha.q(h) + c];
        x[gqa.k(gqa.kv_head(h)) + c] += y[mha.k(h) + c];
        x[gqa.v(gqa.kv_head(h)) + c] += y[mha.v(h) + c];
      }
  }
  for (const bool blocked : {false, true}) {
    Vec out(ref_out.size()), dqkv(qkv.size()), saved(blocked ? B * gqa.NH * T : B * gqa.NH * T * T);
    poison(out), poison(dqkv);
    if (blocked) {
      ops::flash_attention_forward(out.data(), saved.data(), qkv.data(), B, T, gqa);
      ops::flash_attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), saved.data(), B, T, gqa);
    } else {
      ops::materialised_attention_forward(out.data(), saved.data(), qkv.data(), B, T, gqa);
      ops::materialised_attention_backward(dqkv.data(), dout.data(), qkv.data(), saved.data(), B, T, gqa);
    }
    const std::string kind = blocked ? "blocked " : "materialised ";
    expect_close((kind + "out").c_str(), out, ref_out, 1e-12);
    expect_close((kind + "dqkv").c_str(), dqkv, expected, 1e-12);
  }
}

// Decoding with a cache of NKV heads computes what whole-sequence attention does, one position
// at a time (double: to rounding).
TEST(LlamaOps, GroupedQueryDecodeEqualsWholeSequence) {
  const int B = 2, T = 7;
  const AttentionHeads heads{4, 1, 8};  // multi-query: every query head reads one K/V head
  const Vec qkv = random_vector(B * T * heads.qkv_row(), 60, 2.0);
  Vec ref(B * T * heads.out_row()), att(B * heads.NH * T * T);
  ops::materialised_attention_forward(ref.data(), att.data(), qkv.data(), B, T, heads);
  Vec k_cache(B * heads.NKV * T * heads.hs), v_cache(k_cache.size()), out(ref.size());
  poison(k_cache), poison(v_cache);
  for (int t = 0; t < T; t++) {
    Vec row(B * heads.qkv_row()), o(B * heads.out_row());
    for (int b = 0; b < B; b++)
      std::copy_n(qkv.data() + (size_t(b) * T + t) * heads.qkv_row(), heads.qkv_row(), row.data() + b * heads.qkv_row());
    ops::attention_decode(o.data(), k_cache.data(), v_cache.data(), row.data(), B, 1, t, T, heads);
    for (int b = 0; b < B; b++)
      std::copy_n(o.data() + b * heads.out_row(), heads.out_row(), out.data() + (size_t(b) * T + t) * heads.out_row());
  }
  expect_close("out", out, ref, 1e-12);
}

}  // namespace
}  // namespace eth::test

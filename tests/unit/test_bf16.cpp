// bf16 rounding: the primitive (round to nearest even, ties, overflow, NaN, infinities,
// denormals); and the twin's storage points (kernels/twin_backend.hpp), in bf16 and in fp16:
// each op, its outputs poisoned with NaN first, writes 16-bit values equal to the fp32 op run on
// 16-bit copies of its parameters and then rounded; parameters and parameter gradients stay fp32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/twin_backend.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/device_buffer.hpp"

namespace eth::test {
namespace {

using Vec = std::vector<float>;
using kernels::cpu::round_to_bf16;

float from_bits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}
uint32_t to_bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}
bool is_bf16(float x) { return (to_bits(x) & 0xffffu) == 0; }

Vec random_vec(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, scale);
  Vec v(n);
  for (float& x : v) x = normal(rng);
  return v;
}
Vec rounded(Vec v) {
  for (float& x : v) x = round_to_bf16(x);
  return v;
}
Vec nan_vec(size_t n) { return Vec(n, std::numeric_limits<float>::quiet_NaN()); }

TEST(Bf16Rounding, NearestAndTiesToEven) {
  EXPECT_EQ(to_bits(round_to_bf16(1.f)), 0x3f800000u);
  EXPECT_EQ(to_bits(round_to_bf16(from_bits(0x3f808000u))), 0x3f800000u);  // tie, kept bit even: down
  EXPECT_EQ(to_bits(round_to_bf16(from_bits(0x3f818000u))), 0x3f820000u);  // tie, kept bit odd: up
  EXPECT_EQ(to_bits(round_to_bf16(from_bits(0x3f808001u))), 0x3f810000u);  // above the tie: up
  EXPECT_EQ(to_bits(round_to_bf16(from_bits(0x3f817fffu))), 0x3f810000u);  // below the tie: down
  EXPECT_EQ(to_bits(round_to_bf16(from_bits(0xbf818000u))), 0xbf820000u);  // negative: the same
  EXPECT_EQ(to_bits(round_to_bf16(from_bits(0x3f7fffffu))), 0x3f800000u);  // carries into the exponent
}

TEST(Bf16Rounding, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(round_to_bf16(inf), inf);
  EXPECT_EQ(round_to_bf16(-inf), -inf);
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(round_to_bf16(from_bits(0x7f800001u))));  // payload only in the cut bits
  EXPECT_TRUE(std::isnan(round_to_bf16(from_bits(0xff800001u))));
  EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::max()), inf);  // past bf16's largest: overflow
  EXPECT_EQ(to_bits(round_to_bf16(from_bits(0x7f7f7fffu))), 0x7f7f0000u);  // bf16's largest stays finite
  EXPECT_EQ(to_bits(round_to_bf16(-0.f)), 0x80000000u);
  // Denormals: bf16 has fp32's exponent range, so they round like any other bits.
  EXPECT_EQ(to_bits(round_to_bf16(from_bits(0x00000001u))), 0u);
  EXPECT_EQ(to_bits(round_to_bf16(from_bits(0x00008000u))), 0u);           // tie, even: down to 0
  EXPECT_EQ(to_bits(round_to_bf16(from_bits(0x00018000u))), 0x00020000u);  // tie, odd: up
  EXPECT_EQ(to_bits(round_to_bf16(from_bits(0x00008001u))), 0x00010000u);  // smallest bf16 denormal
}

// A million random finite bit patterns: the result is a bf16 value no farther from x than the
// bf16 neighbours on either side, and on a tie the one with an even last bit.
TEST(Bf16Rounding, NearestOnRandomBits) {
  std::mt19937 rng(5);
  for (int i = 0; i < 1000000; i++) {
    const uint32_t bits = rng();
    const float x = from_bits(bits);
    if (!std::isfinite(x) || (bits & 0x7fffffffu) >= 0x7f7f8000u) continue;  // overflow checked above
    const float r = round_to_bf16(x);
    ASSERT_TRUE(is_bf16(r)) << bits;
    const float down = from_bits(bits & 0xffff0000u), up = from_bits((bits & 0xffff0000u) + 0x10000u);
    const double dr = std::fabs(double(r) - x), dd = std::fabs(double(down) - x), du = std::fabs(double(up) - x);
    ASSERT_LE(dr, std::min(dd, du)) << bits;
    if (dd == du) ASSERT_EQ(to_bits(r) & 0x10000u, 0u) << bits;
  }
}

// Both CPU modes, in and out of place, through the Backend interface.
TEST(Bf16Rounding, BackendPrimitive) {
  for (auto make : {kernels::make_cpu_backend, kernels::make_async_cpu_backend}) {
    auto backend = make(0);
    const Vec x = random_vec(100000, 3);
    kernels::DeviceBuffer<float> a(*backend, x.size()), b(*backend, x.size());
    backend->copy_to_device(a.data(), x.data(), x.size() * sizeof(float));
    backend->round_to(kernels::ElementType::bf16, b.data(), a.data(), x.size());
    backend->round_to(kernels::ElementType::bf16, a.data(), a.data(), x.size());
    Vec out_of_place(x.size()), in_place(x.size());
    backend->copy_to_host(out_of_place.data(), b.data(), x.size() * sizeof(float));
    backend->copy_to_host(in_place.data(), a.data(), x.size() * sizeof(float));
    EXPECT_EQ(out_of_place, rounded(x)) << backend->name();
    EXPECT_EQ(in_place, rounded(x)) << backend->name();
  }
}

// The twin (bf16 and fp16) against the fp32 CPU backend fed 16-bit parameters by hand. CPU
// buffers are host memory, so plain vectors serve as device buffers here.
class Twin : public ::testing::TestWithParam<kernels::Precision> {
 protected:
  const kernels::Precision precision = GetParam();
  std::unique_ptr<kernels::Backend> twin = kernels::make_twin_backend(kernels::make_cpu_backend(), precision);
  std::unique_ptr<kernels::Backend> fp32 = kernels::make_cpu_backend();
  static constexpr int B = 2, T = 5, C = 8, NH = 2, N = B * T, OC = 12, V = 10, Vp = 16;

  float round(float x) const {
    return precision == kernels::Precision::bf16 ? round_to_bf16(x) : kernels::cpu::round_to_fp16(x);
  }
  bool stored(float x) const { return to_bits(round(x)) == to_bits(x); }
  Vec rounded(Vec v) const {
    for (float& x : v) x = round(x);
    return v;
  }
  // out was poisoned: every element written, a value of the storage type, not all zero, equal
  // to `expected`.
  void expect_stored_output(const char* what, const Vec& out, const Vec& expected) const {
    bool nonzero = false;
    for (size_t i = 0; i < out.size(); i++) {
      ASSERT_TRUE(std::isfinite(out[i]) && stored(out[i])) << what << "[" << i << "] = " << out[i];
      ASSERT_EQ(out[i], expected[i]) << what << "[" << i << "]";
      nonzero |= out[i] != 0;
    }
    EXPECT_TRUE(nonzero) << what;
  }
  // A parameter gradient stays fp32: some element is not a value of the storage type.
  void expect_fp32(const char* what, const Vec& x, const Vec& expected) const {
    EXPECT_EQ(x, expected) << what;
    bool any = false;
    for (float v : x) any |= !stored(v);
    EXPECT_TRUE(any) << what << " looks rounded to " << kernels::precision_name(precision);
  }
};

TEST_P(Twin, Names) {
  const std::string p = kernels::precision_name(precision);
  EXPECT_EQ(twin->precision(), precision);
  EXPECT_EQ(twin->storage(), kernels::storage_type(precision));
  EXPECT_EQ(twin->name(), "cpu-" + p);
  EXPECT_EQ(twin->precision_path(), p + " (CPU twin: " + p + " storage, fp32 compute)");
}

TEST_P(Twin, Encoder) {
  const std::vector<int32_t> tokens = {1, 9, 1, 0, 15, 4, 4, 2, 3, 7};  // (B, T), a padded row included
  const Vec wte = random_vec(Vp * C, 1), wpe = random_vec(T * C, 2);
  Vec out = nan_vec(N * C), expected(N * C);
  twin->encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  fp32->encoder_forward(expected.data(), tokens.data(), rounded(wte).data(), rounded(wpe).data(), B, T, C);
  expect_stored_output("encoder out", out, rounded(expected));
}

TEST_P(Twin, MatmulForwardAndBackward) {
  const Vec inp = rounded(random_vec(N * C, 1)), w = random_vec(OC * C, 2), bias = random_vec(OC, 3);
  const Vec w_before = w;
  Vec out = nan_vec(N * OC), expected(N * OC);
  twin->matmul_forward(out.data(), inp.data(), w.data(), bias.data(), N, C, OC);
  fp32->matmul_forward(expected.data(), inp.data(), rounded(w).data(), rounded(bias).data(), N, C, OC);
  expect_stored_output("matmul out", out, rounded(expected));
  EXPECT_EQ(w, w_before);  // the master weights are not touched

  const Vec dout = rounded(random_vec(N * OC, 4));
  Vec dinp = nan_vec(N * C), dw(OC * C, 0.f), db(OC, 0.f), e_dinp(N * C), e_dw(OC * C, 0.f), e_db(OC, 0.f);
  twin->matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), N, C, OC);
  fp32->matmul_backward(e_dinp.data(), e_dw.data(), e_db.data(), dout.data(), inp.data(), rounded(w).data(), N, C, OC);
  expect_stored_output("matmul dinp", dinp, rounded(e_dinp));
  expect_fp32("matmul dweight", dw, e_dw);
  expect_fp32("matmul dbias", db, e_db);
}

TEST_P(Twin, LayerNormForwardAndBackward) {
  const Vec inp = rounded(random_vec(N * C, 1, 3.f)), w = random_vec(C, 2), b = random_vec(C, 3);
  Vec out = nan_vec(N * C), mean(N), rstd(N), expected(N * C), e_mean(N), e_rstd(N);
  twin->layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C);
  fp32->layernorm_forward(expected.data(), e_mean.data(), e_rstd.data(), inp.data(), rounded(w).data(),
                          rounded(b).data(), N, C);
  expect_stored_output("layernorm out", out, rounded(expected));
  expect_fp32("layernorm rstd", rstd, e_rstd);  // statistics stay fp32

  // dinp accumulates onto the residual stream's 16-bit gradient; the sum is stored 16-bit.
  const Vec dout = rounded(random_vec(N * C, 4)), dres = rounded(random_vec(N * C, 5));
  Vec dinp = dres, dw(C, 0.f), db(C, 0.f), e_dinp = dres, e_dw(C, 0.f), e_db(C, 0.f);
  twin->layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), mean.data(),
                           rstd.data(), N, C);
  fp32->layernorm_backward(e_dinp.data(), e_dw.data(), e_db.data(), dout.data(), inp.data(), rounded(w).data(),
                           mean.data(), rstd.data(), N, C);
  expect_stored_output("layernorm dinp", dinp, rounded(e_dinp));
  expect_fp32("layernorm dweight", dw, e_dw);
}

TEST_P(Twin, AttentionForwardAndBackward) {
  const Vec qkv = rounded(random_vec(N * 3 * C, 1));
  const size_t saved_floats = twin->attention_saved_floats(B, NH, T);
  Vec out = nan_vec(N * C), saved(saved_floats), expected(N * C), e_saved(saved_floats);
  twin->attention_forward(out.data(), saved.data(), qkv.data(), B, T, kernels::AttentionHeads::multi_head(C, NH));
  fp32->attention_forward(expected.data(), e_saved.data(), qkv.data(), B, T, kernels::AttentionHeads::multi_head(C, NH));
  expect_stored_output("attention out", out, rounded(expected));
  EXPECT_EQ(saved, e_saved);  // softmax statistics stay fp32

  const Vec dout = rounded(random_vec(N * C, 2));
  Vec dqkv = nan_vec(N * 3 * C), e_dqkv(N * 3 * C);
  twin->attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), saved.data(), B, T, kernels::AttentionHeads::multi_head(C, NH));
  fp32->attention_backward(e_dqkv.data(), dout.data(), qkv.data(), out.data(), saved.data(), B, T, kernels::AttentionHeads::multi_head(C, NH));
  expect_stored_output("attention dqkv", dqkv, rounded(e_dqkv));
}

TEST_P(Twin, Elementwise) {
  const size_t n = 64;
  const Vec x = rounded(random_vec(n, 1)), y = rounded(random_vec(n, 2)), d = rounded(random_vec(n, 3));
  Vec out = nan_vec(n), expected(n);
  twin->gelu_forward(out.data(), x.data(), n);
  fp32->gelu_forward(expected.data(), x.data(), n);
  expect_stored_output("gelu out", out, rounded(expected));
  out = nan_vec(n);
  twin->gelu_backward(out.data(), x.data(), d.data(), n);
  fp32->gelu_backward(expected.data(), x.data(), d.data(), n);
  expect_stored_output("gelu dinp", out, rounded(expected));
  out = nan_vec(n);
  twin->residual_forward(out.data(), x.data(), y.data(), n);
  fp32->residual_forward(expected.data(), x.data(), y.data(), n);
  expect_stored_output("residual out", out, rounded(expected));
}

TEST_P(Twin, CrossEntropy) {
  const Vec logits = rounded(random_vec(N * Vp, 1, 2.f));
  std::vector<int32_t> targets(N);
  for (int i = 0; i < N; i++) targets[i] = (3 * i) % V;
  Vec l = logits, e_l = logits, loss(B), e_loss(B);
  twin->crossentropy_forward_backward(loss.data(), l.data(), targets.data(), B, T, V, Vp, 1.f / B);
  fp32->crossentropy_forward_backward(e_loss.data(), e_l.data(), targets.data(), B, T, V, Vp, 1.f / B);
  expect_fp32("losses", loss, e_loss);
  expect_stored_output("dlogits", l, rounded(e_l));
  l = logits;  // evaluation: the logits are left as they are
  twin->crossentropy_forward_backward(loss.data(), l.data(), targets.data(), B, T, V, Vp, 0.f);
  EXPECT_EQ(l, logits);
}

INSTANTIATE_TEST_SUITE_P(Paths, Twin, ::testing::Values(kernels::Precision::bf16, kernels::Precision::fp16),
                         [](const auto& info) { return std::string(kernels::precision_name(info.param)); });

}  // namespace
}  // namespace eth::test

// The llama family's GPU kernels (kernels/gpu_ops/llama_elementwise.hpp: SwiGLU forward and
// backward, rotary positions forward and backward; layernorm.hpp's RMSNorm, layernorm16.hpp's
// fused residual + RMSNorm) in the kernel interpreter
// (ETH_BACKEND=cuda-emulated), at fp32, bf16 and fp16 storage, against the CPU twin of the same
// storage (the CPU backend, or its 16-bit twin) on the same inputs: bit for bit, since each
// kernel loads E, computes the twin's fp32 expression term for term (the host's exp, cos and sin
// on both sides) and rounds once where the twin narrows. On hardware the special functions
// differ from the host's by an ulp or two; bench/gpu/run.sh's kernel checks bound that. And in
// fp32 against the float64 templates, element by element: SwiGLU's few roundings (exp within 1
// ulp, then +, /, *: at most 5 u of the output, u = 2^-24, bound 8 u |out| + 1e-30), rotary's
// x1 c - x2 s from the same fp32 cos and sin (two products and a sum: 3 u (|x1| + |x2|)).
// Outputs are NaN-poisoned first; sizes are off the warp's 32 lanes and the 256-thread blocks;
// each test checks its kernels launched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/llama_ops.hpp"
#include "kernels/emulated/cuda_emulated_backend.hpp"
#include "kernels/twin_backend.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/rotary.hpp"

namespace eth::test {
namespace {

using kernels::AttentionHeads;
using kernels::Backend;
using kernels::ElementType;
using kernels::Precision;

constexpr int N = 37, FC = 45;
constexpr int B = 2, T = 19, T0 = 3;
const AttentionHeads kHeads{6, 2, 8};  // 6 query heads sharing 2 K/V heads of 8 channels
constexpr double u = 1.0 / (1 << 24);

// One storage type's two sides: the kernels in the interpreter and the CPU twin.
struct Sides {
  Precision precision;
  std::unique_ptr<Backend> twin = precision == Precision::fp32
                                      ? kernels::make_cpu_backend()
                                      : kernels::make_twin_backend(kernels::make_cpu_backend(), precision);
  std::unique_ptr<Backend> kernels = kernels::make_cuda_emulated_backend(0, kernels::own_arithmetic_path(precision));
  ElementType type = kernels::storage_type(precision);
  size_t bytes(size_t n) const { return n * kernels::element_bytes(type); }
  uint64_t launches(const std::string& kernel) const {
    const auto& counts = kernels::cuda_emulated_launch(*kernels)->kernel_counts();
    const auto it = counts.find(kernel);
    return it == counts.end() ? 0 : it->second.launches;
  }
  std::string suffix() const { return precision == Precision::fp32 ? "" : precision == Precision::bf16 ? "_bf16" : "_fp16"; }

  // n values of the storage type from normal(0, scale) fp32 values (rounded as convert rounds).
  std::vector<std::byte> values(size_t n, float scale, uint32_t seed) const {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.f, scale);
    std::vector<float> f(n);
    for (float& x : f) x = normal(rng);
    std::vector<std::byte> out(bytes(n));
    twin->convert({out.data(), type}, f.data(), n);
    return out;
  }
  std::vector<std::byte> poisoned(size_t n) const { return std::vector<std::byte>(bytes(n), std::byte{0xff}); }
  std::vector<double> widened(const std::vector<std::byte>& v) const {
    const size_t n = v.size() / kernels::element_bytes(type);
    std::vector<float> f(n);
    twin->convert(f.data(), kernels::ConstTensor{v.data(), type}, n);
    return {f.begin(), f.end()};
  }
};

void expect_same_bytes(const std::vector<std::byte>& got, const std::vector<std::byte>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0) << what << ": the kernels and the twin differ";
}

class LlamaOpsInterpreted : public ::testing::TestWithParam<Precision> {};

TEST_P(LlamaOpsInterpreted, SwiGluEqualsTheTwin) {
  Sides s{GetParam()};
  const auto inp = s.values(size_t(N) * 2 * FC, 2.f, 1), dout = s.values(size_t(N) * FC, 1.f, 2);
  auto out_k = s.poisoned(size_t(N) * FC), out_t = out_k;
  s.kernels->swiglu_forward({out_k.data(), s.type}, {inp.data(), s.type}, N, FC);
  s.twin->swiglu_forward({out_t.data(), s.type}, {inp.data(), s.type}, N, FC);
  auto din_k = s.poisoned(size_t(N) * 2 * FC), din_t = din_k;
  s.kernels->swiglu_backward({din_k.data(), s.type}, {inp.data(), s.type}, {dout.data(), s.type}, N, FC);
  s.twin->swiglu_backward({din_t.data(), s.type}, {inp.data(), s.type}, {dout.data(), s.type}, N, FC);
  s.kernels->synchronize();
  expect_same_bytes(out_k, out_t, "swiglu out");
  expect_same_bytes(din_k, din_t, "swiglu dinp");
  for (double x : s.widened(din_k)) ASSERT_FALSE(std::isnan(x)) << "a poisoned dinp left";
  EXPECT_EQ(s.launches("swiglu_forward" + s.suffix()), 1u);
  EXPECT_EQ(s.launches("swiglu_backward" + s.suffix()), 1u);
  if (s.precision != Precision::fp32) return;
  const std::vector<double> x = s.widened(inp), got = s.widened(out_k);
  std::vector<double> ref(got.size());
  kernels::cpu::swiglu_forward(ref.data(), x.data(), N, FC);
  for (size_t i = 0; i < ref.size(); i++)
    ASSERT_LE(std::abs(got[i] - ref[i]), 8 * u * std::abs(ref[i]) + 1e-30) << "out " << i << ": " << got[i] << " vs " << ref[i];
}

// Forward, then backward on the result, in place, on the stored rows; v untouched.
TEST_P(LlamaOpsInterpreted, RotaryEqualsTheTwin) {
  Sides s{GetParam()};
  ModelConfig c;
  c.head_dim = kHeads.hs;
  c.rope_theta = 500000;
  c.rope_scaling = {32, 1, 4, 16};  // every band of Llama 3's scaling at this small head size
  const std::vector<float> inv_freq = rotary_inverse_frequencies(c);
  float* freq = static_cast<float*>(s.kernels->allocate(inv_freq.size() * sizeof(float)));
  s.kernels->copy_to_device(freq, inv_freq.data(), inv_freq.size() * sizeof(float));
  const size_t n = size_t(B) * T * kHeads.qkv_row();
  const auto qkv = s.values(n, 1.f, 3);
  auto k = qkv, t = qkv;
  s.kernels->rotary_forward({k.data(), s.type}, freq, B, T, T0, kHeads);
  s.twin->rotary_forward({t.data(), s.type}, inv_freq.data(), B, T, T0, kHeads);
  s.kernels->synchronize();
  expect_same_bytes(k, t, "rotary forward");
  EXPECT_NE(std::memcmp(k.data(), qkv.data(), k.size()), 0) << "nothing turned";
  if (s.precision == Precision::fp32) {
    const std::vector<double> x = s.widened(qkv), got = s.widened(k);
    std::vector<double> ref = x;
    kernels::cpu::rotary_forward(ref.data(), inv_freq.data(), B, T, T0, kHeads.NH, kHeads.NKV, kHeads.hs);
    const size_t half = size_t(kHeads.hs / 2);
    for (size_t i = 0; i < n; i++) {
      const size_t in_head = i % kHeads.qkv_row() % size_t(kHeads.hs);
      const size_t mate = in_head < half ? i + half : i - half;  // the pair's other element
      ASSERT_LE(std::abs(got[i] - ref[i]), 3 * u * (std::abs(x[i]) + std::abs(x[mate]))) << "qkv " << i;
    }
  }
  s.kernels->rotary_backward({k.data(), s.type}, freq, B, T, T0, kHeads);
  s.twin->rotary_backward({t.data(), s.type}, inv_freq.data(), B, T, T0, kHeads);
  s.kernels->synchronize();
  expect_same_bytes(k, t, "rotary backward");
  EXPECT_EQ(s.launches("rotary" + s.suffix()), 2u);
  s.kernels->release(freq);
}

// ||got - want|| / ||want||.
double relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size(); i++) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / norm);
}

// The forward equals the twin bit for bit (statistics in double on both sides, as layernorm's).
// The backward computes in fp32 where the twin sums in double: dinp (accumulated into a non-zero
// gradient) within 2 units of the storage's rounding of the twin's norm-wise (a sum of C = 96
// fp32 terms differs by at most about C u = 6e-6 before the final rounding to E, which dominates
// at bf16 and fp16; fp32: 1e-5), dweight (fp32 sums over N = 37 rows in another order) within 1e-5.
TEST_P(LlamaOpsInterpreted, RmsNormEqualsTheTwin) {
  Sides s{GetParam()};
  constexpr int C = 96;
  const float eps = 1e-5f;
  const auto inp = s.values(size_t(N) * C, 2.f, 4), weight = s.values(C, 1.f, 5), dout = s.values(size_t(N) * C, 1.f, 6);
  auto out_k = s.poisoned(size_t(N) * C), out_t = out_k;
  std::vector<float> rstd_k(N, NAN), rstd_t(N, NAN);
  s.kernels->rmsnorm_forward({out_k.data(), s.type}, rstd_k.data(), {inp.data(), s.type}, {weight.data(), s.type}, N, C, eps);
  s.twin->rmsnorm_forward({out_t.data(), s.type}, rstd_t.data(), {inp.data(), s.type}, {weight.data(), s.type}, N, C, eps);
  s.kernels->synchronize();
  expect_same_bytes(out_k, out_t, "rmsnorm out");
  EXPECT_EQ(std::memcmp(rstd_k.data(), rstd_t.data(), N * sizeof(float)), 0) << "rmsnorm rstd";

  auto din_k = s.values(size_t(N) * C, 0.5f, 7), din_t = din_k;
  std::vector<float> dw_k(C, 0.25f), dw_t(C, 0.25f);
  s.kernels->rmsnorm_backward({din_k.data(), s.type}, dw_k.data(), {dout.data(), s.type}, {inp.data(), s.type},
                              {weight.data(), s.type}, rstd_k.data(), N, C);
  s.twin->rmsnorm_backward({din_t.data(), s.type}, dw_t.data(), {dout.data(), s.type}, {inp.data(), s.type},
                           {weight.data(), s.type}, rstd_t.data(), N, C);
  s.kernels->synchronize();
  const double unit = s.precision == Precision::fp32 ? 5e-6 : s.precision == Precision::bf16 ? 1.0 / 256 : 1.0 / 2048;
  EXPECT_LE(relative_error(s.widened(din_k), s.widened(din_t)), 2 * unit) << "rmsnorm dinp";
  EXPECT_LE(relative_error({dw_k.begin(), dw_k.end()}, {dw_t.begin(), dw_t.end()}), 1e-5) << "rmsnorm dweight";
  EXPECT_EQ(s.launches("rmsnorm_forward" + s.suffix()), 1u);
  EXPECT_EQ(s.launches("rmsnorm_backward" + s.suffix()), 1u);
}

// The residual add and the RMSNorm after it in one op: on the 16-bit kernels one launch
// (fused_residual_rmsnorm_forward), on fp32 the two ops; either way the twin's numbers bit for bit
// (the residual stored in E, then normalised as stored, as the twin's two ops do).
TEST_P(LlamaOpsInterpreted, ResidualRmsNormEqualsTheTwin) {
  Sides s{GetParam()};
  constexpr int C = 96;
  const float eps = 1e-6f;
  const auto a = s.values(size_t(N) * C, 1.f, 8), b = s.values(size_t(N) * C, 1.f, 9), weight = s.values(C, 1.f, 10);
  auto res_k = s.poisoned(size_t(N) * C), res_t = res_k, out_k = res_k, out_t = res_k;
  std::vector<float> rstd_k(N, NAN), rstd_t(N, NAN);
  s.kernels->residual_rmsnorm_forward({res_k.data(), s.type}, {out_k.data(), s.type}, rstd_k.data(), {a.data(), s.type},
                                      {b.data(), s.type}, {weight.data(), s.type}, N, C, eps);
  s.twin->residual_rmsnorm_forward({res_t.data(), s.type}, {out_t.data(), s.type}, rstd_t.data(), {a.data(), s.type},
                                   {b.data(), s.type}, {weight.data(), s.type}, N, C, eps);
  s.kernels->synchronize();
  expect_same_bytes(res_k, res_t, "residual");
  expect_same_bytes(out_k, out_t, "rmsnorm out");
  EXPECT_EQ(std::memcmp(rstd_k.data(), rstd_t.data(), N * sizeof(float)), 0) << "rmsnorm rstd";
  const bool fused = s.precision != Precision::fp32;
  EXPECT_EQ(s.launches("fused_residual_rmsnorm_forward" + s.suffix()), fused ? 1u : 0u);
  EXPECT_EQ(s.launches("rmsnorm_forward" + s.suffix()), fused ? 0u : 1u);
}

INSTANTIATE_TEST_SUITE_P(Storage, LlamaOpsInterpreted,
                         ::testing::Values(Precision::fp32, Precision::bf16, Precision::fp16),
                         [](const auto& info) { return std::string(kernels::precision_name(info.param)); });

}  // namespace
}  // namespace eth::test

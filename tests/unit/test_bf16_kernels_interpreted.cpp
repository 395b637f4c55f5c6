// The bf16 path's elementwise kernels in the interpreter (ETH_BACKEND=cuda-emulated's bf16
// kernels, kernels/bf16_kernels.hpp): the embedding forward and backward, the layernorm forward,
// GELU forward and backward, the residual add, each through the bf16 backend on its kernels
// against the same backend computing in fp32 on the CPU (the twin), on the same bf16 inputs.
// Bit for bit: each kernel loads bf16, computes the twin's fp32 expression (term for term, the
// row statistics in double) and rounds once to nearest even where the twin narrows; the
// embedding's parameters are the fp32 masters, rounded as the twin rounds them, layernorm's the
// stage's bf16 copies. Each test checks that its bf16 kernels launched. Outputs are NaN-poisoned
// first; shapes are off the warp's 32 lanes and the kernels' 256-thread blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/bf16_rounding_backend.hpp"
#include "kernels/cpu/bf16.hpp"
#include "kernels/emulated/cuda_emulated_backend.hpp"

namespace eth::test {
namespace {

using kernels::bf16;
using kernels::Backend;

constexpr int B = 2, T = 37, C = 96, Vp = 100;
constexpr size_t N = static_cast<size_t>(B) * T;

std::vector<float> normal_floats(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}
std::vector<bf16> normal_bf16(size_t n, float scale, uint32_t seed) {
  std::vector<bf16> v(n);
  const std::vector<float> f = normal_floats(n, scale, seed);
  for (size_t i = 0; i < n; i++) v[i] = kernels::cpu::to_bf16(f[i]);
  return v;
}
template <class X>
std::vector<X> poisoned(size_t n) {
  std::vector<X> v(n);
  std::memset(v.data(), 0xff, n * sizeof(X));  // NaN as fp32 and as bf16
  return v;
}
// Bit patterns equal, and no NaN left of the poison.
template <class X>
void expect_same_bits(const std::vector<X>& got, const std::vector<X>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < got.size(); i++)
    if (std::memcmp(&got[i], &want[i], sizeof(X)) != 0 && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << got.size() << " differ, the first at " << first;
  for (const X& x : got) {
    float f;
    if constexpr (sizeof(X) == 2) f = kernels::cpu::to_float(x); else f = x;
    ASSERT_FALSE(std::isnan(f)) << what << ": a poisoned value left";
  }
}

struct Paths {
  std::unique_ptr<Backend> twin = kernels::make_bf16_rounding_backend(kernels::make_cpu_backend());
  std::unique_ptr<Backend> device = kernels::make_cuda_emulated_backend();
  kernels::emulated::HostLaunch* launch = kernels::cuda_emulated_launch(*device);
  std::unique_ptr<Backend> kernels = kernels::make_bf16_rounding_backend(std::move(device),
                                                                          kernels::Bf16Compute::kernels);
  // Launches of `kernel` so far: an op that took the fp32-compute path launches none of the bf16
  // kernels, and would equal the twin trivially.
  uint64_t launches(const std::string& kernel) const {
    const auto it = launch->kernel_counts().find(kernel);
    return it == launch->kernel_counts().end() ? 0 : it->second.launches;
  }
};

TEST(Bf16KernelsInterpreted, RunOnTheKernelsPath) {
  Paths p;
  EXPECT_TRUE(p.kernels->runs_bf16_kernels());
  EXPECT_FALSE(p.twin->runs_bf16_kernels());
}

TEST(Bf16KernelsInterpreted, EmbeddingForwardAndBackwardEqualTheTwin) {
  Paths p;
  const std::vector<float> wte = normal_floats(static_cast<size_t>(Vp) * C, 0.02f, 1);
  const std::vector<float> wpe = normal_floats(static_cast<size_t>(T) * C, 0.01f, 2);
  std::vector<int32_t> tokens(N);
  for (size_t i = 0; i < N; i++) tokens[i] = static_cast<int32_t>((i * 7 + 3) % 11);  // tokens repeat
  const std::vector<bf16> dout = normal_bf16(N * C, 1.f, 3);
  std::vector<bf16> out_twin = poisoned<bf16>(N * C), out_kernels = poisoned<bf16>(N * C);
  p.twin->encoder_forward(out_twin.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  p.kernels->encoder_forward(out_kernels.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  expect_same_bits(out_kernels, out_twin, "encoder out");

  // Accumulated into non-zero gradients.
  std::vector<float> dwte_twin = normal_floats(wte.size(), 0.1f, 4), dwpe_twin = normal_floats(wpe.size(), 0.1f, 5);
  std::vector<float> dwte_kernels = dwte_twin, dwpe_kernels = dwpe_twin;
  p.twin->encoder_backward(dwte_twin.data(), dwpe_twin.data(), dout.data(), tokens.data(), B, T, C);
  p.kernels->encoder_backward(dwte_kernels.data(), dwpe_kernels.data(), dout.data(), tokens.data(), B, T, C);
  p.kernels->synchronize();
  expect_same_bits(dwte_kernels, dwte_twin, "dwte");
  expect_same_bits(dwpe_kernels, dwpe_twin, "dwpe");
  for (const char* kernel : {"encoder_forward_bf16", "encoder_backward_wpe_bf16", "encoder_backward_wte_bf16"})
    EXPECT_EQ(p.launches(kernel), 1u) << kernel;
}

TEST(Bf16KernelsInterpreted, LayerNormForwardEqualsTheTwin) {
  Paths p;
  const std::vector<bf16> inp = normal_bf16(N * C, 2.f, 6);
  // The stage's bf16 parameter copies, as the kernels' path takes them.
  const std::vector<bf16> weight = normal_bf16(C, 1.f, 7), bias = normal_bf16(C, 0.5f, 8);
  std::vector<bf16> out_twin = poisoned<bf16>(N * C), out_kernels = poisoned<bf16>(N * C);
  std::vector<float> mean_twin = poisoned<float>(N), rstd_twin = poisoned<float>(N);
  std::vector<float> mean_kernels = poisoned<float>(N), rstd_kernels = poisoned<float>(N);
  p.twin->layernorm_forward(out_twin.data(), mean_twin.data(), rstd_twin.data(), inp.data(), weight.data(), bias.data(),
                            static_cast<int>(N), C);
  p.kernels->layernorm_forward(out_kernels.data(), mean_kernels.data(), rstd_kernels.data(), inp.data(), weight.data(),
                               bias.data(), static_cast<int>(N), C);
  p.kernels->synchronize();
  expect_same_bits(out_kernels, out_twin, "layernorm out");
  expect_same_bits(mean_kernels, mean_twin, "layernorm mean");
  expect_same_bits(rstd_kernels, rstd_twin, "layernorm rstd");
  EXPECT_EQ(p.launches("layernorm_forward_bf16"), 1u);
}

TEST(Bf16KernelsInterpreted, GeluAndResidualEqualTheTwin) {
  Paths p;
  const size_t n = N * 4 * C + 5;
  const std::vector<bf16> x = normal_bf16(n, 2.f, 9), dout = normal_bf16(n, 1.f, 10), y = normal_bf16(n, 1.f, 11);
  std::vector<bf16> twin = poisoned<bf16>(n), kern = poisoned<bf16>(n);
  p.twin->gelu_forward(twin.data(), x.data(), n);
  p.kernels->gelu_forward(kern.data(), x.data(), n);
  expect_same_bits(kern, twin, "gelu out");
  // In place, as the stage runs it (dinp == dout).
  twin = dout;
  kern = dout;
  p.twin->gelu_backward(twin.data(), x.data(), twin.data(), n);
  p.kernels->gelu_backward(kern.data(), x.data(), kern.data(), n);
  p.kernels->synchronize();
  expect_same_bits(kern, twin, "gelu dinp (in place)");
  twin = poisoned<bf16>(n);
  kern = poisoned<bf16>(n);
  p.twin->residual_forward(twin.data(), x.data(), y.data(), n);
  p.kernels->residual_forward(kern.data(), x.data(), y.data(), n);
  p.kernels->synchronize();
  expect_same_bits(kern, twin, "residual out");
  for (const char* kernel : {"gelu_forward_bf16", "gelu_backward_bf16", "residual_forward_bf16"})
    EXPECT_EQ(p.launches(kernel), 1u) << kernel;
}

}  // namespace
}  // namespace eth::test

// The bf16 matmul ops (kernels/gpu_ops/matmul16.hpp) through HostLaunch, whose gemm16 is
// cuBLASLt's contract on the host, against (a) a float64 reference on the same bf16 inputs and
// (b) the CPU bf16 twin (the CPU backend wrapped in kernels/twin_backend.cpp: fp32 ops,
// bf16 rounding at the storage points). Shapes are multiples of nothing the GEMM tiles use
// (N = 37, C = 80, OC = 200; OC is a multiple of 8 because cuBLASLt's GELU aux needs that leading
// dimension); inputs are O(1), random, non-zero and bf16; outputs an op overwrites are NaN
// first, accumulated ones (dweight, dbias) start non-zero and are compared by what was added.
//
// Tolerances, norm-wise relative (tests/gpu/cuda_checks.hpp's compare), u = 2^-8 the bf16 unit
// roundoff (8 significant bits, round to nearest even):
//   kBf16Out   u + 1e-5   a bf16 output against float64: one rounding, |bf16(x) - x| <= u |x| per
//                         element, hence in norm, plus fp32 accumulation (sums of <= 200 O(1)
//                         terms, ~1e-6).
//   kBf16Ulp   2u         a bf16 output against the twin: both round an fp32 sum of the same
//                         products in a different order; they differ only where the two sums
//                         straddle a rounding boundary, and then by one bf16 ulp (2u relative).
//   kFp32      1e-5       an fp32 output (dweight, dbias) against either: only the summation
//                         order differs (cuda_checks.hpp's reasoning).
// The fused forms (GELU in the forward's epilogue, dGELU in the backward's dinp GEMM) take GELU
// and its gradient from the fp32 sum, as the twin's fused ops (matmul_gelu_forward,
// matmul_dgelu_backward) do: against the twin kBf16Ulp, against float64 kBf16Out (one rounding
// of a function of an fp32 sum; gelu' <= 1.13, and the aux pre_gelu is a bf16 input, exact).
// Each test prints every comparison. Library calls are counted: one cuBLASLt call per GEMM, the
// epilogue fused (no bias or GELU kernel).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/twin_backend.hpp"
#include "kernels/emulated/host_launch.hpp"
#include "kernels/gpu_ops/matmul16.hpp"
#include "lib/base/random.hpp"
#include "tests/gpu/cuda_checks.hpp"

namespace {

namespace gpu_ops = eth::kernels::gpu_ops;
namespace simt = eth::kernels::simt;
using eth::kernels::Backend;
using eth::kernels::bf16;
using eth::kernels::emulated::HostLaunch;
using eth::test::gpu::compare;
using eth::test::gpu::Comparison;
using eth::test::gpu::kFp32;
using Vec = std::vector<float>;
using Bf16s = std::vector<bf16>;
using Doubles = std::vector<double>;

constexpr double kU = 1.0 / 256;  // 2^-8
constexpr double kBf16Out = kU + 1e-5;
constexpr double kBf16Ulp = 2 * kU;

constexpr int kN = 37, kC = 80, kOC = 200;

// scale * U(-1, 1) rounded to bf16, deterministic per stream.
Bf16s random_bf16(size_t n, uint64_t stream, float scale = 1.f) {
  Bf16s v(n);
  for (size_t i = 0; i < n; i++)
    v[i] = simt::to_bf16(scale * static_cast<float>(2.0 * eth::uniform_at(stream, i) - 1.0));
  return v;
}
Vec random_floats(size_t n, uint64_t stream) {
  Vec v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<float>(2.0 * eth::uniform_at(stream, i) - 1.0);
  return v;
}
Bf16s nan_bf16(size_t n) { return Bf16s(n, simt::to_bf16(std::numeric_limits<float>::quiet_NaN())); }
Vec widen(const Bf16s& v) {
  Vec out(v.size());
  for (size_t i = 0; i < v.size(); i++) out[i] = simt::to_float(v[i]);
  return out;
}
Doubles to_doubles(const Vec& v) { return Doubles(v.begin(), v.end()); }
// What an accumulated output gained: exact in double (two fp32 values).
Doubles added(const Vec& after, const Vec& before) {
  Doubles out(after.size());
  for (size_t i = 0; i < after.size(); i++) out[i] = double(after[i]) - double(before[i]);
  return out;
}

double gelu64(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
double gelu_grad64(double x) {
  const double th = std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x);
}

uint64_t gemm_calls(const HostLaunch& l) {
  const auto it = l.library_counts().find("cublaslt_matmul_bf16");
  return it == l.library_counts().end() ? 0 : it->second.calls;
}
uint64_t launches(const HostLaunch& l, const std::string& kernel) {
  const auto it = l.kernel_counts().find(kernel);
  return it == l.kernel_counts().end() ? 0 : it->second.launches;
}
uint64_t total_launches(const HostLaunch& l) {
  uint64_t n = 0;
  for (const auto& [name, c] : l.kernel_counts()) n += c.launches;
  return n;
}

void expect_passed(const std::vector<Comparison>& comparisons) {
  for (const Comparison& c : comparisons) {
    std::printf("%s\n", c.describe().c_str());
    EXPECT_TRUE(c.passed()) << c.describe();
  }
}

std::unique_ptr<Backend> bf16_twin() {
  return eth::kernels::make_twin_backend(eth::kernels::make_cpu_backend(), eth::kernels::Precision::bf16);
}

// Forward: out (and pre_gelu) against float64 and the twin (matmul_forward, then gelu_forward).
void check_forward(bool with_bias, bool with_gelu) {
  const int N = kN, C = kC, OC = kOC;
  const Bf16s inp = random_bf16(size_t(N) * C, 1), weight = random_bf16(size_t(OC) * C, 2);
  const Bf16s bias = random_bf16(OC, 3);
  Bf16s out = nan_bf16(size_t(N) * OC), pre = nan_bf16(size_t(N) * OC);
  HostLaunch launch;
  gpu_ops::matmul_forward16(launch, out.data(), with_gelu ? pre.data() : nullptr, inp.data(), weight.data(),
                               with_bias ? bias.data() : nullptr, N, C, OC);
  EXPECT_EQ(gemm_calls(launch), 1u);
  EXPECT_EQ(total_launches(launch), 0u) << "bias and GELU must be fused into the GEMM";

  // (a) float64 on the same bf16 values.
  Doubles x64(size_t(N) * OC), out64(size_t(N) * OC);
  for (int n = 0; n < N; n++)
    for (int o = 0; o < OC; o++) {
      double s = with_bias ? simt::to_float(bias[o]) : 0.0;
      for (int c = 0; c < C; c++)
        s += double(simt::to_float(inp[size_t(n) * C + c])) * simt::to_float(weight[size_t(o) * C + c]);
      x64[size_t(n) * OC + o] = s;
      out64[size_t(n) * OC + o] = with_gelu ? gelu64(s) : s;
    }
  std::vector<Comparison> r;
  r.push_back(compare("forward out vs float64", to_doubles(widen(out)), out64, kBf16Out));
  if (with_gelu) r.push_back(compare("forward pre_gelu vs float64", to_doubles(widen(pre)), x64, kBf16Out));

  // (b) the twin: pre = bf16(x), out = bf16(gelu(x)) with x its fp32 sum (matmul_gelu_forward).
  std::unique_ptr<Backend> twin = bf16_twin();
  const Vec inp_f = widen(inp), weight_f = widen(weight), bias_f = widen(bias);
  Vec pre_t(size_t(N) * OC), out_t(size_t(N) * OC);
  const float* bias_t = with_bias ? bias_f.data() : nullptr;
  if (with_gelu) {
    twin->matmul_gelu_forward(out_t.data(), pre_t.data(), inp_f.data(), weight_f.data(), bias_t, N, C, OC);
    r.push_back(compare("forward pre_gelu vs twin", widen(pre), pre_t, kBf16Ulp));
  } else {
    twin->matmul_forward(out_t.data(), inp_f.data(), weight_f.data(), bias_t, N, C, OC);
  }
  r.push_back(compare("forward out vs twin", widen(out), out_t, kBf16Ulp));
  expect_passed(r);
}

// Backward: dinp, dweight, dbias against float64 and the twin (matmul_backward, or with GELU
// matmul_dgelu_backward: inp = GELU(pre), dinp = gelu'(pre) (dout W)).
void check_backward(bool with_dbias, bool with_gelu) {
  const int N = kN, C = kC, OC = kOC;
  const Bf16s inp = random_bf16(size_t(N) * C, 11), weight = random_bf16(size_t(OC) * C, 12);
  const Bf16s dout = random_bf16(size_t(N) * OC, 13), pre = random_bf16(size_t(N) * C, 14, 3.f);
  const Vec dweight0 = random_floats(size_t(OC) * C, 15), dbias0 = random_floats(OC, 16);
  Bf16s dinp = nan_bf16(size_t(N) * C);
  Vec dweight = dweight0, dbias = dbias0;
  HostLaunch launch;
  gpu_ops::matmul_backward16(launch, dinp.data(), dweight.data(), with_dbias ? dbias.data() : nullptr, dout.data(),
                                inp.data(), weight.data(), with_gelu ? pre.data() : nullptr, N, C, OC);
  EXPECT_EQ(gemm_calls(launch), 2u);
  EXPECT_EQ(launches(launch, "matmul16_dbias_add"), with_dbias ? 1u : 0u);
  EXPECT_EQ(total_launches(launch), uint64_t(with_dbias)) << "dGELU must be fused into the dinp GEMM";
  if (!with_dbias) {
    EXPECT_EQ(dbias, dbias0);
  }

  // (a) float64.
  Doubles dinp64(size_t(N) * C, 0.0), dw64(size_t(OC) * C, 0.0), db64(OC, 0.0);
  for (int n = 0; n < N; n++)
    for (int o = 0; o < OC; o++) {
      const double g = simt::to_float(dout[size_t(n) * OC + o]);
      db64[o] += g;
      for (int c = 0; c < C; c++) {
        dinp64[size_t(n) * C + c] += g * simt::to_float(weight[size_t(o) * C + c]);
        dw64[size_t(o) * C + c] += g * simt::to_float(inp[size_t(n) * C + c]);
      }
    }
  if (with_gelu)
    for (size_t i = 0; i < dinp64.size(); i++) dinp64[i] *= gelu_grad64(simt::to_float(pre[i]));
  std::vector<Comparison> r;
  r.push_back(compare("backward dinp vs float64", to_doubles(widen(dinp)), dinp64, kBf16Out));
  r.push_back(compare("backward dweight vs float64", added(dweight, dweight0), dw64, kFp32));
  if (with_dbias) r.push_back(compare("backward dbias vs float64", added(dbias, dbias0), db64, kFp32));

  // (b) the twin, on the same starting gradients.
  std::unique_ptr<Backend> twin = bf16_twin();
  const Vec inp_f = widen(inp), weight_f = widen(weight), dout_f = widen(dout), pre_f = widen(pre);
  Vec dinp_t(size_t(N) * C), dweight_t = dweight0, dbias_t = dbias0;
  float* dbias_arg = with_dbias ? dbias_t.data() : nullptr;
  if (with_gelu)
    twin->matmul_dgelu_backward(dinp_t.data(), dweight_t.data(), dbias_arg, dout_f.data(), inp_f.data(),
                                weight_f.data(), pre_f.data(), N, C, OC);
  else
    twin->matmul_backward(dinp_t.data(), dweight_t.data(), dbias_arg, dout_f.data(), inp_f.data(), weight_f.data(), N,
                          C, OC);
  r.push_back(compare("backward dinp vs twin", widen(dinp), dinp_t, kBf16Ulp));
  r.push_back(compare("backward dweight vs twin", dweight, dweight_t, kFp32, &dweight0));
  if (with_dbias) r.push_back(compare("backward dbias vs twin", dbias, dbias_t, kFp32, &dbias0));
  expect_passed(r);
}

TEST(GpuMatmulBf16Interpreted, Forward) { check_forward(false, false); }
TEST(GpuMatmulBf16Interpreted, ForwardBias) { check_forward(true, false); }
TEST(GpuMatmulBf16Interpreted, ForwardBiasGelu) { check_forward(true, true); }
TEST(GpuMatmulBf16Interpreted, ForwardGeluWithoutBias) { check_forward(false, true); }
TEST(GpuMatmulBf16Interpreted, Backward) { check_backward(false, false); }
TEST(GpuMatmulBf16Interpreted, BackwardDbias) { check_backward(true, false); }
TEST(GpuMatmulBf16Interpreted, BackwardDbiasDgelu) { check_backward(true, true); }

// The DGELU epilogue at the contract level: D = bf16(gelu'(aux) * op(A) op(B)), with leading
// dimensions larger than the rows, so that a mixed-up ld shows.
TEST(GpuMatmulBf16Interpreted, GemmDgeluEpilogue) {
  const int m = 40, n = 37, k = 80, lda = k + 3, ldb = k + 5, ldd = m + 2, ldaux = m + 8;
  const Bf16s A = random_bf16(size_t(lda) * m, 21), B = random_bf16(size_t(ldb) * n, 22);
  Bf16s aux = random_bf16(size_t(ldaux) * n, 23, 3.f), D = nan_bf16(size_t(ldd) * n);
  gpu_ops::GemmBf16 g;
  g.trans_a = true;  // A stored (k, m): op(A) = A^T
  g.m = m, g.n = n, g.k = k;
  g.A = A.data(), g.lda = lda;
  g.B = B.data(), g.ldb = ldb;
  g.D_16 = D.data(), g.ldd = ldd;
  g.epilogue = gpu_ops::GemmEpilogue::dgelu;
  g.aux = aux.data(), g.ldaux = ldaux;
  HostLaunch launch;
  launch.gemm16(g);
  EXPECT_EQ(gemm_calls(launch), 1u);
  Doubles ours, ref;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m; i++) {
      double s = 0;
      for (int r = 0; r < k; r++)
        s += double(simt::to_float(A[size_t(i) * lda + r])) * simt::to_float(B[size_t(j) * ldb + r]);
      ref.push_back(gelu_grad64(simt::to_float(aux[size_t(j) * ldaux + i])) * s);
      ours.push_back(simt::to_float(D[size_t(j) * ldd + i]));
    }
  expect_passed({compare("gemm_bf16 dgelu D vs float64", ours, ref, kBf16Out)});
  // cuBLASLt's rule: the aux leading dimension is a multiple of 8.
  g.ldaux = m + 1;
  EXPECT_THROW(launch.gemm16(g), std::invalid_argument);
}

}  // namespace

// The fused 16-bit kernels of the stage step (kernels/gpu_ops/{layernorm,classifier}_bf16.hpp, and
// optimizer.hpp's AdamW writing the 16-bit copies), each at E = bf16 and at E = fp16 (typed
// tests), run through the kernel interpreter (HostLaunch: the very kernels and grids the CUDA
// backend launches), each against
//   (a) the twin: the CPU ops (kernels/cpu/gpt_ops.hpp) in fp32 on the same inputs in E, rounded
//       to E at the twin's storage points (kernels/twin_backend.cpp), and
//   (b) a float64 reference: the same CPU ops in double on the same inputs in E, unrounded.
// Shapes are not multiples of the kernels' blocks or tiles (N = 37 or 133 rows, C = 80 or 200,
// V = 101 of Vp = 128, n = 1037); inputs are random, O(1) and non-zero; outputs are poisoned with
// NaN first, accumulated outputs seeded with non-zero values.
//
// Every tolerance is per element, stated where it is used and derived from the arithmetic. Units:
// storing in E rounds by at most u relative (half its ulp), u = 2^-8 for bf16 (8 significant
// bits) and 2^-11 for fp16 (11); below E's normal range by at most half the spacing of its
// subnormals, tiny = 2^-24 for fp16 (2^-133 for bf16, never reached here), so each bound on a
// stored value adds tiny (one ulp there) or tiny / 2 (one rounding) to its relative term. fp32
// rounds by e = 2^-24 relative. Each check prints the largest error and the largest ratio
// error / tolerance it measured (1 would be at the bound).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kernels/bf16.hpp"
#include "kernels/cpu/gpt_ops.hpp"
#include "kernels/fp16.hpp"
#include "kernels/emulated/host_launch.hpp"
#include "kernels/gpu_ops/classifier16.hpp"
#include "kernels/gpu_ops/layernorm16.hpp"
#include "kernels/gpu_ops/optimizer.hpp"
#include "lib/base/random.hpp"
#include "tests/unit/gradcheck.hpp"

namespace {

namespace gpu_ops = eth::kernels::gpu_ops;
namespace cpu = eth::kernels::cpu;
using eth::kernels::bf16;
using eth::kernels::fp16;
using eth::kernels::emulated::HostLaunch;
using eth::kernels::simt::from_float;
using eth::kernels::simt::to_float;
using eth::test::expect_each_close;
using Vec = std::vector<float>;
using Vec64 = std::vector<double>;

constexpr double kE = 1.0 / (1 << 24);        // fp32 rounding, relative: 2^-24
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// What a bound needs of the storage type E: u, its storage rounding relative to the value, and
// tiny, the spacing of its subnormals (see the top of the file).
template <class E>
struct Format;
template <>
struct Format<bf16> {
  static constexpr double kU = 1.0 / 256, kTiny = 0x1p-133;
};
template <>
struct Format<fp16> {
  static constexpr double kU = 1.0 / 2048, kTiny = 0x1p-24;
};
template <class E>
std::vector<E> nans(size_t n) {
  return std::vector<E>(n, from_float<E>(kNaN));
}

// offset + scale * U(-1, 1), deterministic per stream.
Vec random_floats(size_t n, uint64_t stream, float scale = 1.f, float offset = 0.f) {
  Vec v(n);
  for (size_t i = 0; i < n; i++) v[i] = offset + scale * static_cast<float>(2.0 * eth::uniform_at(stream, i) - 1.0);
  return v;
}
template <class E>
std::vector<E> to16(const Vec& v) {
  std::vector<E> out(v.size());
  for (size_t i = 0; i < v.size(); i++) out[i] = from_float<E>(v[i]);
  return out;
}
template <class E>
std::vector<E> random16(size_t n, uint64_t stream, float scale = 1.f, float offset = 0.f) {
  return to16<E>(random_floats(n, stream, scale, offset));
}
template <typename T>
Vec floats(const std::vector<T>& v) {
  Vec out(v.size());
  for (size_t i = 0; i < v.size(); i++) out[i] = to_float(v[i]);
  return out;
}
template <typename T>
Vec64 doubles(const std::vector<T>& v) {
  const Vec f = floats(v);
  return Vec64(f.begin(), f.end());
}
template <class E>
void round_to(Vec& v) {
  for (float& x : v) x = to_float(from_float<E>(x));
}
template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class E>
class Fused16 : public ::testing::Test {};
using Formats = ::testing::Types<bf16, fp16>;
struct FormatNames {
  template <class E>
  static std::string GetName(int) {
    return eth::kernels::simt::named<E>("", "bf16", "fp16");
  }
};
TYPED_TEST_SUITE(Fused16, Formats, FormatNames);

// ---- AdamW with 16-bit copies ----------------------------------------------------------------

TYPED_TEST(Fused16, AdamWStateIsTheFp32OpsBitForBitAndCopiesAreTheRoundedParameters) {
  using E = TypeParam;
  constexpr double kU = Format<E>::kU;
  const size_t n = 1037;
  const float lr = 3e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, wd = 0.1f, grad_scale = 0.5f;
  const int step = 3;
  const float c1 = 1.f - static_cast<float>(std::pow(double{beta1}, step));
  const float c2 = 1.f - static_cast<float>(std::pow(double{beta2}, step));
  const Vec p0 = random_floats(n, 1), g = random_floats(n, 2), m0 = random_floats(n, 3, 0.1f);
  Vec v0 = random_floats(n, 4, 0.01f);
  for (float& x : v0) x = std::fabs(x);

  std::vector<eth::kernels::AdamWSegment> segments;
  eth::kernels::append_adamw_segments(segments, 0, 0, n, true);
  const gpu_ops::AdamWSettings settings{lr, beta1, beta2, eps, wd, grad_scale, c1, c2};

  HostLaunch launch;
  Vec p = p0, m = m0, v = v0;
  std::vector<E> copies = nans<E>(n);
  gpu_ops::adamw_update(launch, p.data(), copies.data(), g.data(), m.data(), v.data(), segments.data(), segments.size(),
                        settings);
  Vec p_fp32 = p0, m_fp32 = m0, v_fp32 = v0;
  gpu_ops::adamw_update<HostLaunch, float>(launch, p_fp32.data(), nullptr, g.data(), m_fp32.data(), v_fp32.data(), segments.data(),
                        segments.size(), settings);
  EXPECT_TRUE(same_bits(p, p_fp32)) << "params differ from adamw_update's";
  EXPECT_TRUE(same_bits(m, m_fp32)) << "m differs from adamw_update's";
  EXPECT_TRUE(same_bits(v, v_fp32)) << "v differs from adamw_update's";
  EXPECT_TRUE(same_bits(copies, to16<E>(p))) << "a copy is not its rounded parameter";
  EXPECT_EQ(launch.kernel_counts().at(gpu_ops::AdamWKernel<E>::kName).launches, 1u);
  {
    // The run above took its first 1036 floats 4 to an access and the last one alone (the vectors
    // start on 16 bytes, as malloc's storage does); one float further on, the kernel takes all of
    // them one by one, and must give the same bits.
    for (const float* x : std::initializer_list<const float*>{p.data(), g.data(), m.data(), v.data()})
      ASSERT_EQ(reinterpret_cast<uintptr_t>(x) % 16, 0u) << "the wide path is not tested";
    std::vector<eth::kernels::AdamWSegment> shifted;
    eth::kernels::append_adamw_segments(shifted, 1, 1, n, true);
    const auto one_on = [](const Vec& x) {  // x after one value
      Vec y(1);
      y.insert(y.end(), x.begin(), x.end());
      return y;
    };
    Vec p1 = one_on(p0), m1 = one_on(m0), v1 = one_on(v0);
    std::vector<E> copies1 = nans<E>(n + 1);
    gpu_ops::adamw_update(launch, p1.data(), copies1.data(), one_on(g).data(), m1.data(), v1.data(), shifted.data(),
                          shifted.size(), settings);
    EXPECT_TRUE(same_bits(Vec(p1.begin() + 1, p1.end()), p)) << "params differ one by one";
    EXPECT_TRUE(same_bits(Vec(m1.begin() + 1, m1.end()), m)) << "m differs one by one";
    EXPECT_TRUE(same_bits(Vec(v1.begin() + 1, v1.end()), v)) << "v differs one by one";
    EXPECT_TRUE(same_bits(std::vector<E>(copies1.begin() + 1, copies1.end()), copies)) << "copies differ one by one";
  }

  // (a) The CPU twin (cpu::adamw_update<float>): the same formula in the same order. Its
  // corrections come from the same pow; only the host compiler's contraction could differ, so
  // allow one fp32 rounding per term: 4 e (|p| + |lr step|) covers it.
  Vec p_cpu = p0, m_cpu = m0, v_cpu = v0;
  std::vector<E> copies_cpu = nans<E>(n);
  cpu::adamw_update<float>(p_cpu.data(), copies_cpu.data(), g.data(), m_cpu.data(), v_cpu.data(), segments.data(),
                           segments.size(), lr, beta1, beta2, eps, wd, grad_scale, step);
  EXPECT_TRUE(same_bits(copies_cpu, to16<E>(p_cpu))) << "a CPU copy is not its rounded parameter";
  expect_each_close("adamw params vs CPU twin", doubles(p), doubles(p_cpu),
               [&](size_t i) { return 4 * kE * (std::fabs(p_cpu[i]) + std::fabs(p_cpu[i] - p0[i])) + 1e-30; });
  expect_each_close("adamw m vs CPU twin", doubles(m), doubles(m_cpu), [&](size_t i) { return 4 * kE * std::fabs(m_cpu[i]) + 1e-30; });
  expect_each_close("adamw v vs CPU twin", doubles(v), doubles(v_cpu), [&](size_t i) { return 4 * kE * std::fabs(v_cpu[i]) + 1e-30; });

  // (b) float64: m and v round 4 times (3 products, 1 sum), so |err| <= 8 e |terms|; the step
  // lr m^/(sqrt v^ + eps) carries ~8 more roundings and the error of m and v: relative 16 e of
  // the step, plus e |p| for the final subtraction; bounds doubled for margin.
  Vec64 p64 = doubles(p0), m64 = doubles(m0), v64 = doubles(v0), step64(n);
  cpu::adamw_update<double, double>(p64.data(), nullptr, doubles(g).data(), m64.data(), v64.data(), segments.data(),
                            segments.size(), lr, beta1, beta2, eps, wd, grad_scale, step);
  for (size_t i = 0; i < n; i++) step64[i] = std::fabs(p64[i] - p0[i]);
  expect_each_close("adamw m vs float64", doubles(m), m64,
               [&](size_t i) { return 8 * kE * (beta1 * std::fabs(m0[i]) + std::fabs(grad_scale * g[i])); });
  expect_each_close("adamw v vs float64", doubles(v), v64, [&](size_t i) {
    return 8 * kE * (beta2 * v0[i] + grad_scale * grad_scale * g[i] * g[i]);
  });
  expect_each_close("adamw params vs float64", doubles(p), p64,
               [&](size_t i) { return 2 * (kE * std::fabs(p64[i]) + 16 * kE * step64[i]); });
  // The copies against the float64 parameters: one rounding to E (u, tiny / 2) on top of the above.
  expect_each_close("adamw copies vs float64", doubles(copies), p64, [&](size_t i) {
    return kU * std::fabs(p64[i]) + Format<E>::kTiny / 2 + 2 * (kE * std::fabs(p64[i]) + 16 * kE * step64[i]);
  });
}

// ---- residual + layernorm forward ------------------------------------------------------------

struct Shape {
  int N, C;
};

template <class E>
void check_fused_forward(Shape s) {
  constexpr double kU = Format<E>::kU, kTiny = Format<E>::kTiny;
  const int N = s.N, C = s.C;
  const size_t NC = static_cast<size_t>(N) * C;
  SCOPED_TRACE("N = " + std::to_string(N) + ", C = " + std::to_string(C));
  std::printf("fused residual + layernorm forward, N = %d, C = %d\n", N, C);
  // A non-zero mean per row, so that the mean's term is exercised.
  const std::vector<E> a = random16<E>(NC, 11, 1.f, 0.3f), b = random16<E>(NC, 12);
  const std::vector<E> weight = random16<E>(static_cast<size_t>(C), 13, 0.5f, 1.f);
  const std::vector<E> bias = random16<E>(static_cast<size_t>(C), 14, 0.3f);

  HostLaunch launch;
  std::vector<E> residual = nans<E>(NC), out = nans<E>(NC);
  Vec mean(static_cast<size_t>(N), kNaN), rstd(static_cast<size_t>(N), kNaN);
  gpu_ops::fused_residual_layernorm_forward16(launch, residual.data(), out.data(), mean.data(), rstd.data(), a.data(),
                                              b.data(), weight.data(), bias.data(), N, C);
  EXPECT_EQ(launch.kernel_counts().at(gpu_ops::FusedResidualNormForwardKernel<E, true>::kName).launches, 1u);

  // (a) The twin: residual_forward then round; layernorm_forward on the rounded residual, then round.
  const Vec af = floats(a), bf = floats(b), wf = floats(weight), biasf = floats(bias);
  Vec res_twin(NC), out_twin(NC), mean_twin(static_cast<size_t>(N)), rstd_twin(static_cast<size_t>(N));
  cpu::residual_forward<float>(res_twin.data(), af.data(), bf.data(), NC);
  round_to<E>(res_twin);
  cpu::layernorm_forward<float>(out_twin.data(), mean_twin.data(), rstd_twin.data(), res_twin.data(), wf.data(),
                                biasf.data(), N, C);
  round_to<E>(out_twin);
  // One fp32 add and one rounding on both sides: equal bits.
  EXPECT_TRUE(same_bits(floats(residual), res_twin)) << "the residual is not the twin's";
  // Both sides sum the same values in double, in different orders (1e-16 relative), then round
  // to fp32: at most one fp32 ulp apart (2 e relative).
  expect_each_close("mean vs twin", doubles(mean), doubles(mean_twin), [&](size_t i) { return 2 * kE * std::fabs(mean_twin[i]) + 1e-15; });
  expect_each_close("rstd vs twin", doubles(rstd), doubles(rstd_twin), [&](size_t i) { return 2 * kE * rstd_twin[i]; });
  // out: the fp32 values before storing agree to a few e (the statistics' last bits, and FMA
  // contraction on the GPU), so a stored value is the twin's or, where the two straddle a
  // rounding boundary, one ulp of E away: at most 2 u relative, or tiny.
  expect_each_close("out vs twin", doubles(out), doubles(out_twin), [&](size_t i) { return 2 * kU * std::fabs(out_twin[i]) + kTiny; });

  // (b) float64 from the same inputs in E: the residual exact, the layernorm unrounded.
  Vec64 res64(NC), out64(NC), mean64(static_cast<size_t>(N)), rstd64(static_cast<size_t>(N));
  cpu::residual_forward<double>(res64.data(), doubles(a).data(), doubles(b).data(), NC);
  cpu::layernorm_forward<double>(out64.data(), mean64.data(), rstd64.data(), res64.data(), doubles(weight).data(),
                                 doubles(bias).data(), N, C);
  // The stored residual: one rounding to E of the exact sum.
  expect_each_close("residual vs float64", doubles(residual), res64,
               [&](size_t i) { return kU * std::fabs(res64[i]) + kTiny / 2; });
  // The kernel normalises the rounded residual r' = r (1 + d), |d| <= u. Per row, with mean |r|
  // and rms r over the row: |mean' - mean| <= u mean|r| <= u rms r; the standard deviation moves
  // by at most u rms r, so rstd relatively by u rms r rstd; norm_i = (r_i - mean) rstd moves by
  // u (|r_i| + rms r) rstd + |norm_i| u rms r rstd; out_i by |w_i| times that, plus its own
  // storage rounding u |out_i| (or tiny / 2). fp32 rounding (a few e) is far below; each bound is
  // doubled.
  Vec64 rms(static_cast<size_t>(N), 0.0);
  for (size_t i = 0; i < NC; i++) rms[i / C] += res64[i] * res64[i] / C;
  for (double& r : rms) r = std::sqrt(r);
  expect_each_close("mean vs float64", doubles(mean), mean64, [&](size_t n) { return 2 * kU * rms[n] + 2 * kE * std::fabs(mean64[n]); });
  expect_each_close("rstd vs float64", doubles(rstd), rstd64, [&](size_t n) { return 2 * (kU * rms[n] * rstd64[n] + kE) * rstd64[n]; });
  expect_each_close("out vs float64", doubles(out), out64, [&](size_t i) {
    const size_t n = i / C, c = i % C;
    const double norm = (res64[i] - mean64[n]) * rstd64[n];
    const double dnorm = kU * (std::fabs(res64[i]) + rms[n] + std::fabs(norm) * rms[n]) * rstd64[n];
    return 2 * (std::fabs(wf[c]) * dnorm + kU * std::fabs(out64[i]) + kTiny / 2);
  });
}

TYPED_TEST(Fused16, ResidualLayerNormForwardMatchesTheTwinAndFloat64) {
  for (Shape s : {Shape{37, 80}, Shape{37, 200}}) check_fused_forward<TypeParam>(s);
}

// ---- layernorm backward, one launch ----------------------------------------------------------

template <class E>
struct BackwardResult {
  std::vector<E> dinp;
  Vec dweight, dbias;
};

template <class E>
struct BackwardInputs {
  int N, C;
  std::vector<E> dout, inp, weight, dinp0;
  Vec mean, rstd, dweight0, dbias0;

  BackwardInputs(int n, int c) : N(n), C(c) {
    const size_t NC = static_cast<size_t>(N) * C;
    dout = random16<E>(NC, 21);
    inp = random16<E>(NC, 22, 1.f, 0.2f);
    weight = random16<E>(static_cast<size_t>(C), 23, 0.5f, 1.f);
    dinp0 = random16<E>(NC, 24);
    dweight0 = random_floats(static_cast<size_t>(C), 25);
    dbias0 = random_floats(static_cast<size_t>(C), 26);
    // The statistics the forward pass keeps, fp32, from the input in E.
    Vec scratch(NC);
    mean.resize(static_cast<size_t>(N));
    rstd.resize(static_cast<size_t>(N));
    const Vec ones(static_cast<size_t>(C), 1.f), zeros(static_cast<size_t>(C), 0.f);
    cpu::layernorm_forward<float>(scratch.data(), mean.data(), rstd.data(), floats(inp).data(), ones.data(), zeros.data(),
                                  N, C);
  }

  BackwardResult<E> run(HostLaunch& launch) const {
    BackwardResult<E> r{dinp0, dweight0, dbias0};
    gpu_ops::layernorm_backward16(launch, r.dinp.data(), r.dweight.data(), r.dbias.data(), dout.data(), inp.data(),
                                  weight.data(), mean.data(), rstd.data(), N, C);
    return r;
  }
};

template <class E>
void check_backward(Shape s) {
  constexpr double kU = Format<E>::kU, kTiny = Format<E>::kTiny;
  const int N = s.N, C = s.C;
  const size_t NC = static_cast<size_t>(N) * C;
  SCOPED_TRACE("N = " + std::to_string(N) + ", C = " + std::to_string(C));
  std::printf("layernorm backward, N = %d, C = %d (%d blocks)\n", N, C,
              static_cast<int>(gpu_ops::ceil_div(static_cast<size_t>(N), gpu_ops::kLayerNormBackwardRowsPerBlock)));
  const BackwardInputs<E> in(N, C);
  HostLaunch launch;
  const BackwardResult<E> r = in.run(launch);
  // One launch of the rows' kernel, then the column sums of its partials (two launches).
  EXPECT_EQ(launch.kernel_counts().at(gpu_ops::LayerNormBackwardKernel<E, 1>::kName).launches, 1u);
  EXPECT_EQ(launch.kernel_counts().at(gpu_ops::PartialsTerm::kName).launches, 1u);
  EXPECT_EQ(launch.kernel_counts().at(gpu_ops::ColumnFinishKernel::kName).launches, 1u);
  EXPECT_EQ(launch.kernel_counts().size(), 3u) << "and no other kernel";

  // (a) The twin: layernorm_backward in fp32 on the values in E, dinp rounded after the add.
  const Vec doutf = floats(in.dout), inpf = floats(in.inp), wf = floats(in.weight);
  Vec dinp_twin = floats(in.dinp0), dw_twin = in.dweight0, db_twin = in.dbias0;
  cpu::layernorm_backward<float>(dinp_twin.data(), dw_twin.data(), db_twin.data(), doutf.data(), inpf.data(), wf.data(),
                                 in.mean.data(), in.rstd.data(), N, C);
  round_to<E>(dinp_twin);
  // dweight, dbias: the same fp32 terms (norm * dout: 3 roundings; dout: exact) added in another
  // order (the twin row by row into the seed, the kernel per block, then the blocks, then the
  // seed): each side within (N + 4) e of sum |terms| + |seed| of the exact sum, so apart by
  // twice that.
  Vec64 abs_dw(static_cast<size_t>(C), 0.0), abs_db(static_cast<size_t>(C), 0.0);
  for (size_t i = 0; i < NC; i++) {
    const size_t n = i / C, c = i % C;
    abs_dw[c] += std::fabs((inpf[i] - in.mean[n]) * in.rstd[n] * doutf[i]);
    abs_db[c] += std::fabs(doutf[i]);
  }
  const double k_sum = 2.0 * (N + 4) * kE;
  expect_each_close("dweight vs twin", doubles(r.dweight), doubles(dw_twin),
               [&](size_t c) { return k_sum * (abs_dw[c] + std::fabs(in.dweight0[c])); });
  expect_each_close("dbias vs twin", doubles(r.dbias), doubles(db_twin),
               [&](size_t c) { return k_sum * (abs_db[c] + std::fabs(in.dbias0[c])); });

  // (b) float64 on the same values (mean and rstd the fp32 ones the kernel reads).
  Vec64 dinp64 = doubles(in.dinp0), dw64 = doubles(in.dweight0), db64 = doubles(in.dbias0);
  cpu::layernorm_backward<double>(dinp64.data(), dw64.data(), db64.data(), doubles(in.dout).data(), doubles(in.inp).data(),
                                  doubles(in.weight).data(), doubles(in.mean).data(), doubles(in.rstd).data(), N, C);
  // dinp, element by element. The kernel computes in fp32: norm = (x - mean) rstd (2 roundings),
  // dnorm = weight dout (exact: two 16-bit values), the row sums of dnorm and dnorm norm (3 e
  // relative per term) over at most C / 32 + 8 terms a lane, 5 butterfly steps and the division
  // by C: the means off by (C / 32 + 17) e times A = mean |dnorm| and Bm = mean |dnorm norm|.
  // dx = (dnorm - a - norm b) rstd carries those errors (b's times |norm|), norm's (2 e |norm b|)
  // and four roundings of its own: err_dx <= (C / 32 + 23) e rstd (|dnorm| + A + |norm| Bm). The
  // sum dinp0 + dx in fp32 (e |dinp0 + dx|), then one rounding to E (u, or tiny / 2). Doubled for
  // second-order terms. The twin computes dx in double, then rounds it to fp32 and the sum to
  // fp32 and E: the kernel's bound plus the twin's own (2 e, u).
  Vec64 dx64(NC), err_dx(NC);
  for (int n = 0; n < N; n++) {
    double A = 0.0, Bm = 0.0;
    const auto norm = [&](int c) { return (static_cast<double>(inpf[static_cast<size_t>(n) * C + c]) - in.mean[n]) * in.rstd[n]; };
    const auto dnorm = [&](int c) { return static_cast<double>(wf[c]) * doutf[static_cast<size_t>(n) * C + c]; };
    for (int c = 0; c < C; c++) {
      A += std::fabs(dnorm(c)) / C;
      Bm += std::fabs(dnorm(c) * norm(c)) / C;
    }
    for (int c = 0; c < C; c++) {
      const size_t i = static_cast<size_t>(n) * C + c;
      dx64[i] = dinp64[i] - to_float(in.dinp0[i]);
      err_dx[i] = (C / 32.0 + 23) * kE * in.rstd[n] * (std::fabs(dnorm(c)) + A + std::fabs(norm(c)) * Bm);
    }
  }
  const auto fp32_error = [&](size_t i, double sum_roundings) {
    return 2 * (sum_roundings * kE * (std::fabs(to_float(in.dinp0[i])) + std::fabs(dx64[i])) + err_dx[i]);
  };
  expect_each_close("dinp vs float64", doubles(r.dinp), dinp64,
               [&](size_t i) { return kU * std::fabs(dinp64[i]) + kTiny / 2 + fp32_error(i, 1); });
  expect_each_close("dinp vs twin", doubles(r.dinp), doubles(dinp_twin),
               [&](size_t i) { return 2 * kU * std::fabs(dinp_twin[i]) + kTiny + fp32_error(i, 3); });
  expect_each_close("dweight vs float64", doubles(r.dweight), dw64,
               [&](size_t c) { return k_sum * (abs_dw[c] + std::fabs(in.dweight0[c])); });
  expect_each_close("dbias vs float64", doubles(r.dbias), db64,
               [&](size_t c) { return k_sum * (abs_db[c] + std::fabs(in.dbias0[c])); });

  // A rerun on a fresh launch with 4 host threads, so that blocks finish in another order and
  // another block is the last: the same bits.
  const int saved = omp_get_max_threads();
  omp_set_num_threads(4);
  for (int rerun = 0; rerun < 3; rerun++) {
    HostLaunch again;
    const BackwardResult<E> r2 = in.run(again);
    EXPECT_TRUE(same_bits(r2.dweight, r.dweight)) << "dweight differs on rerun " << rerun;
    EXPECT_TRUE(same_bits(r2.dbias, r.dbias)) << "dbias differs on rerun " << rerun;
    EXPECT_TRUE(same_bits(r2.dinp, r.dinp)) << "dinp differs on rerun " << rerun;
  }
  omp_set_num_threads(saved);
}

TYPED_TEST(Fused16, LayerNormBackwardInOneLaunchMatchesTheTwinAndFloat64AndRepeatsItsBits) {
  // 2 blocks, the second of 5 rows; 5 blocks, the last of 5 rows; C = 60, not a multiple of 8:
  // values one by one instead of 16-byte pieces.
  for (Shape s : {Shape{37, 80}, Shape{133, 200}, Shape{45, 60}}) check_backward<TypeParam>(s);
}

// ---- classifier ------------------------------------------------------------------------------

TYPED_TEST(Fused16, ClassifierRowsInChunksMatchTheTwinAndFloat64) {
  using E = TypeParam;
  constexpr double kU = Format<E>::kU, kTiny = Format<E>::kTiny;
  const int B = 3, T = 13, V = 101, Vp = 128, rows = B * T, chunk = 20;  // chunks of 20 and 19 rows
  const float dlogits_scale = 0.7f;
  const float g = dlogits_scale / static_cast<float>(T);  // as the twin computes it
  const size_t RV = static_cast<size_t>(rows) * Vp;
  // Logits of spread 3 (softmax far from uniform), and 40 in the padded columns: if they
  // entered the max or the sum, the losses would be off by ~35.
  Vec logits_f = random_floats(RV, 31, 3.f);
  for (size_t i = 0; i < RV; i++)
    if (static_cast<int>(i % Vp) >= V) logits_f[i] = 40.f;
  const std::vector<E> logits0 = to16<E>(logits_f);
  std::vector<int32_t> targets(static_cast<size_t>(rows));
  for (int r = 0; r < rows; r++) targets[r] = static_cast<int32_t>(eth::uniform_at(32, r) * V);
  targets[0] = V - 1;  // the last real column, in the last, partial vector

  const auto run = [&](HostLaunch& launch, std::vector<E>& logits, Vec& token_losses, float scale_over_T) {
    for (int first = 0; first < rows; first += chunk) {
      const int n = std::min(chunk, rows - first);
      gpu_ops::classifier_rows16(launch, token_losses.data() + first, logits.data() + static_cast<size_t>(first) * Vp,
                                 targets.data() + first, n, V, Vp, scale_over_T);
    }
  };
  HostLaunch launch;
  std::vector<E> logits = logits0;
  Vec token_losses(static_cast<size_t>(rows), kNaN), losses(static_cast<size_t>(B), kNaN);
  run(launch, logits, token_losses, g);
  gpu_ops::sample_mean_losses(launch, losses.data(), token_losses.data(), B, T);
  EXPECT_EQ(launch.kernel_counts().at(gpu_ops::ClassifierRows16Kernel<E>::kName).launches, 2u);

  // (a) The twin: crossentropy_forward_backward in fp32 on the logits in E, dlogits rounded.
  Vec twin = floats(logits0), losses_twin(static_cast<size_t>(B));
  cpu::crossentropy_forward_backward<float>(losses_twin.data(), twin.data(), targets.data(), B, T, V, Vp, dlogits_scale);
  round_to<E>(twin);
  // (b) float64.
  Vec64 ref64 = doubles(logits0), losses64(static_cast<size_t>(B));
  cpu::crossentropy_forward_backward<double>(losses64.data(), ref64.data(), targets.data(), B, T, V, Vp, dlogits_scale);

  // The softmax sum: the kernel adds in fp32 (8 terms per thread, rescaled by exp(max_old -
  // max) when the max grows, then 5 + 4 pairwise combinations), the twin in double; each term
  // and rescaling is within ~4 e, so the sum is within (8 + 9 + 4) * 4 e ~ 2^-18 relative of
  // exact; the loss log(sum) - (x_t - max) then within 2^-18 absolute plus 2 e of its value.
  const double k_sum = 1.0 / (1 << 18);
  expect_each_close("sample losses vs twin", doubles(losses), doubles(losses_twin),
               [&](size_t b) { return k_sum + 4 * kE * std::fabs(losses_twin[b]); });
  expect_each_close("sample losses vs float64", doubles(losses), losses64,
               [&](size_t b) { return k_sum + 4 * kE * std::fabs(losses64[b]); });
  // dlogits = g (p - onehot): p within 2^-18 + a few e relative (the sum above, exp, the two
  // products), so before storing both sides agree to g (2^-18 p + 2^-18 onehot); stored in E,
  // they may then be one ulp of E apart (2 u relative, or tiny) where they straddle a boundary.
  const double ag = std::fabs(g);
  for (size_t i = 0; i < RV; i++) {
    if (static_cast<int>(i % Vp) >= V) {
      ASSERT_EQ(logits[i].bits, 0u) << "padded column " << i % Vp << " of row " << i / Vp;
    }
  }
  expect_each_close("dlogits vs twin", doubles(logits), doubles(twin),
               [&](size_t i) { return 2 * kU * std::fabs(twin[i]) + kTiny + 2 * k_sum * ag; });
  // Against float64: one rounding to E (u, or tiny / 2) of the value plus the fp32 error above.
  expect_each_close("dlogits vs float64", doubles(logits), ref64,
               [&](size_t i) { return kU * std::fabs(ref64[i]) + kTiny / 2 + 2 * k_sum * ag; });

  // Inference (dlogits_scale 0): the logits untouched, the same losses bit for bit.
  HostLaunch inference;
  std::vector<E> untouched = logits0;
  Vec token_losses2(static_cast<size_t>(rows), kNaN);
  run(inference, untouched, token_losses2, 0.f);
  EXPECT_TRUE(same_bits(untouched, logits0)) << "the logits were written with dlogits_scale 0";
  EXPECT_TRUE(same_bits(token_losses2, token_losses)) << "the losses depend on dlogits_scale";

  // A launch whose blocks cannot keep a row in shared memory reads the row twice from global
  // memory: the same bits.
  HostLaunch small;
  small.set_max_shared_bytes(sizeof(typename gpu_ops::ClassifierRows16Kernel<E>::Smem));
  std::vector<E> reread = logits0;
  Vec token_losses3(static_cast<size_t>(rows), kNaN);
  run(small, reread, token_losses3, g);
  EXPECT_TRUE(same_bits(reread, logits)) << "dlogits depend on where the row was kept";
  EXPECT_TRUE(same_bits(token_losses3, token_losses)) << "the losses depend on where the row was kept";
}

}  // namespace

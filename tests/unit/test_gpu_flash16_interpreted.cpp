// The 16-bit flash attention ops (kernels/gpu_ops/flash_attention16.hpp), the very kernels and
// launches the CUDA backend runs, executed by the kernel interpreter through HostLaunch, each
// check at E = bf16 and at E = fp16, from inputs in E (random, O(1), never zero) with every
// output poisoned (NaN) first: against a float64 reference from the same values (the
// materialised double kernels) and against the CPU twin of E (the CPU flash attention in fp32 on
// those values, its outputs rounded to E); plus the matrix instructions' FLOPs (every tile
// product on mma.sync, no tile above the diagonal), a rerun that must be bit-identical and the
// head size it refuses.
//
// Shapes (B, T, C, NH[, NKV]), hs = C / NH: T = 37 is one partial 64-row tile; T = 70 a full one
// and 6 rows; T = 130 two and 2 rows, and at hs 128 (backward's 32-row steps) four steps and 2
// rows; grouped-query ones (NKV < NH K/V heads, whose dK and dV sum over their group's query
// heads) at both head sizes. Cost: the
// interpreter runs every GPU thread as a fiber, about 1 us per thread per barrier, shuffle or
// matrix instruction; the file takes about 2 s with OMP_NUM_THREADS=1 (both types).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/gpt_ops.hpp"
#include "kernels/emulated/host_launch.hpp"
#include "kernels/gpu_ops/flash_attention16.hpp"
#include "tests/unit/gradcheck.hpp"

namespace eth::test {
namespace {

namespace cpu = eth::kernels::cpu;
namespace gpu_ops = eth::kernels::gpu_ops;
namespace simt = eth::kernels::simt;
using kernels::bf16;
using kernels::fp16;
using kernels::emulated::HostLaunch;
using Vec = std::vector<double>;
using FVec = std::vector<float>;

// Norm-wise relative errors ||ours - ref|| / ||ref|| of the outputs in E (out, dq, dk, dv), with
// u the unit roundoff of E: 2^-8 for bf16 (8 significant bits), 2^-11 for fp16 (11), both
// rounding to nearest even. Where they come from:
//   - each output is rounded to E once, when stored: at most u relative per element;
//   - P (before O += P V and dV += P^T dO) and dS (before dQ += dS K and dK += dS^T Q) are
//     rounded to E from fp32: at most u relative per term of those sums (fp16: values below
//     2^-14 keep fewer bits, off by at most 2^-25 each: some 1e-8 on sums of O(1) terms, far
//     below u). For terms of random sign that stays about u norm-wise, more where the terms
//     cancel: each row of dS sums to zero, so dQ and dK cancel most;
//   - fp32 arithmetic everywhere else: about 1e-7, negligible beside either u.
// The float64 reference has neither rounding. The CPU twin rounds its outputs too (mostly to the
// same bits, one ulp (up to 2 u) apart where the two fp32 values straddle a rounding boundary)
// and rounds no P or dS. Measured, against either: bf16 out 0.47 u, dv 0.6 u, dq and dk 0.76 u;
// fp16 (its own u) out 0.48 u, dv 0.63 u, dq and dk 0.75 u. Both are held at 2 u (7.8e-3 and
// 9.8e-4), over 2.5 times the largest measured; an off-by-one in any of the three causal masks
// measured at 0.2 or more.
template <class E>
constexpr double kTolerance = 2 * (std::is_same_v<E, fp16> ? 1.0 / 2048 : 1.0 / 256);
// Element by element, against float64 (ElementBounds below): the same roundings, each term's
// bound summed with its magnitude instead of assumed to cancel.
// lse is fp32 all the way: S from bf16 operands is exact products summed in fp32, the online
// softmax fp32 (unit roundoff 6e-8 over a few dozen operations, expf within 2 ulp): a few 1e-7.
// 1e-5 is the fp32 op's bound (test_gpu_attention_interpreted.cpp).
constexpr double kLseTolerance = 1e-5;

struct Shape {
  int B, T, C, NH;
  int NKV = 0;  // K/V heads; 0: NH (multi-head)
  kernels::AttentionHeads heads() const { return {NH, NKV ? NKV : NH, C / NH}; }
};
void PrintTo(const Shape& s, std::ostream* os) {
  *os << "B " << s.B << " T " << s.T << " C " << s.C << " NH " << s.NH << " NKV " << s.heads().NKV;
}

template <class E>
std::vector<E> to16(const FVec& v) {
  std::vector<E> h(v.size());
  for (size_t i = 0; i < v.size(); i++) h[i] = simt::from_float<E>(v[i]);
  return h;
}
template <class E>
FVec to_float(const std::vector<E>& h) {
  FVec v(h.size());
  for (size_t i = 0; i < h.size(); i++) v[i] = simt::to_float(h[i]);
  return v;
}
Vec to_double(const FVec& v) { return Vec(v.begin(), v.end()); }
template <class E>
Vec to_double(const std::vector<E>& h) {
  return to_double(to_float(h));
}
// Uniform in (-scale, scale), rounded to E: zero only by a chance the seeds do not hit.
template <class E>
std::vector<E> random16(size_t n, uint64_t seed, double scale) {
  const Vec v = random_vector(n, seed, scale);
  return to16<E>(FVec(v.begin(), v.end()));
}
template <class E>
std::vector<E> nans16(size_t n) {
  return std::vector<E>(n, simt::from_float<E>(NAN));
}
FVec float_nans(size_t n) {
  FVec v(n);
  poison(v);
  return v;
}
// Part `part` (q, k or v) of a (B, T, (NH + 2 NKV) hs) buffer, as (B, T, NH hs) or
// (B, T, NKV hs).
Vec part_of(const Vec& qkv, int part, kernels::AttentionHeads heads) {
  const size_t row = heads.qkv_row(), begin = part == 0 ? heads.q(0) : part == 1 ? heads.k(0) : heads.v(0);
  const size_t width = part == 0 ? heads.out_row() : static_cast<size_t>(heads.NKV) * heads.hs;
  Vec v(qkv.size() / row * width);
  for (size_t i = 0; i < v.size(); i++) v[i] = qkv[i / width * row + begin + i % width];
  return v;
}
// v rounded to E (the twin's stored outputs).
template <class E>
FVec rounded(const FVec& v) {
  return to_float(to16<E>(v));
}

// One shape's inputs, rounded to E (and the same values in fp32 for the CPU sides), and the
// interpreted ops on them.
template <class E>
struct FlashRun {
  using Values = std::vector<E>;
  Shape s;
  kernels::AttentionHeads heads;
  size_t outs, qkvs, stats;  // elements of out (B, T, NH hs), qkv (B, T, (NH + 2 NKV) hs), lse
  Values qkv, dout;
  FVec qkv_f, dout_f;
  FlashRun(const Shape& shape, uint64_t seed)
      : s(shape),
        heads(shape.heads()),
        outs(static_cast<size_t>(shape.B) * shape.T * heads.out_row()),
        qkvs(static_cast<size_t>(shape.B) * shape.T * heads.qkv_row()),
        stats(static_cast<size_t>(shape.B) * shape.NH * shape.T),
        // scale 2: scores up to a few units, so the softmax is peaked and the running max moves
        qkv(random16<E>(qkvs, seed, 2.0)),
        dout(random16<E>(outs, seed + 1, 1.0)),
        qkv_f(to_float(qkv)),
        dout_f(to_float(dout)) {}

  // out and lse of the interpreted forward, from outputs poisoned with NaN.
  void forward(HostLaunch& launch, Values& out, FVec& lse) const {
    out = nans16<E>(outs), lse = float_nans(stats);
    gpu_ops::attention_forward16(launch, out.data(), lse.data(), qkv.data(), s.B, s.T, heads);
  }
  // dqkv of the interpreted backward from the given out and lse, poisoned first.
  Values backward(HostLaunch& launch, const Values& out, const FVec& lse) const {
    Values dqkv = nans16<E>(qkvs);
    gpu_ops::attention_backward16(launch, dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), s.B, s.T,
                                  heads);
    return dqkv;
  }
};

// Bounds on each element of out, dq, dk and dv against float64, from the float64 probabilities P
// (att), the inputs and the reference outputs; u is E's unit roundoff, e = 2^-24 fp32's, tiny/2
// the largest rounding error of a value in E's subnormal range (2^-25 for fp16; none for bf16).
//   - P in fp32: exp2 of scale S - lse, each operand within a few e: relative error at most
//     (8 + 4 (|scale S| + |lse|)) e =: p_ij e.
//   - out = sum_j round(P_ij) V_j / l with l the unrounded sum: u P_ij + tiny/2 per term (the
//     rounding), p_ij e P_ij (fp32 P), (T + 16) e P_ij over the fp32 sums; then out is rounded
//     (u |out| + tiny/2): out_b = u |O| + tiny/2 + 1.01 sum_j ((u + (p_ij + T + 16) e) P_ij + tiny/2) |V_j|.
//   - dv = sum_i round(P_ij) dO_i: the same with dO in V's place.
//   - D_i = dO_i . out_i from the stored out: off by dD_i = sum_d |dO_id| out_b(i, d) + (H + 2) e sum |dO O|.
//   - dS_ij = P_ij (dP_ij - D_i) with dP = dO_i . V_j in fp32 ((H + 2) e sum |dO V|), rounded to E:
//     err_ij = u |dS_ij| + tiny/2 + P_ij (dD_i + (H + 2) e sum_d |dO_id V_jd| + p_ij e |dP_ij - D_i|);
//     dq = scale sum_j dS_ij K_j: dq_b = u |dQ| + tiny/2 + 1.01 scale sum_j (err_ij + (T + 16) e |dS_ij|) |K_j|,
//     and dk the same over i with Q_i.
//   - With grouped-query heads, dk and dv sum the terms above over the group's query heads too:
//     their bounds add up over the group, and the fp32 sums run over group T terms.
// The factor 1.01 covers the second-order terms.
struct ElementBounds {
  Vec out, dqkv;  // (B, T, NH hs) and (B, T, (NH + 2 NKV) hs)
};

template <class E>
ElementBounds element_bounds(const Shape& shape, const Vec& qkv, const Vec& dout, const Vec& att, const Vec& out,
                             const Vec& lse, const Vec& dqkv) {
  const int B = shape.B, T = shape.T, NH = shape.NH;
  const kernels::AttentionHeads heads = shape.heads();
  const int H = heads.hs;
  const size_t C3 = heads.qkv_row(), C = heads.out_row();
  constexpr bool kFp16 = std::is_same_v<E, fp16>;
  const double u = kFp16 ? 1.0 / 2048 : 1.0 / 256, tiny = kFp16 ? std::ldexp(1.0, -24) : 0.0;
  const double e = std::ldexp(1.0, -24), scale = 1.0 / std::sqrt(static_cast<double>(H));
  const double fp32_sum = (heads.group() * T + 16) * e;
  ElementBounds bounds{Vec(out.size(), 0.0), Vec(dqkv.size(), 0.0)};
  for (int b = 0; b < B; b++) {
    for (int h = 0; h < NH; h++) {
      const size_t part_at[3] = {heads.q(h), heads.k(heads.kv_head(h)), heads.v(heads.kv_head(h))};
      const auto at = [&](int t, int part, int d) { return (static_cast<size_t>(b) * T + t) * C3 + part_at[part] + d; };
      const auto row = [&](int t, int d) { return (static_cast<size_t>(b) * T + t) * C + heads.q(h) + d; };
      const double* P = att.data() + (static_cast<size_t>(b) * NH + h) * T * T;
      const auto p_error = [&](int i, int j) {  // p_ij e
        double s = 0;
        for (int d = 0; d < H; d++) s += qkv[at(i, 0, d)] * qkv[at(j, 1, d)];
        return (8 + 4 * (std::fabs(scale * s) + std::fabs(lse[(static_cast<size_t>(b) * NH + h) * T + i]))) * e;
      };
      std::vector<double> pe(static_cast<size_t>(T) * T, 0.0);
      for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) pe[static_cast<size_t>(i) * T + j] = p_error(i, j);
      for (int i = 0; i < T; i++) {
        double dD = 0, dot_abs = 0;
        for (int d = 0; d < H; d++) {
          double m = 0;
          for (int j = 0; j <= i; j++)
            m += ((u + pe[static_cast<size_t>(i) * T + j] + fp32_sum) * P[static_cast<size_t>(i) * T + j] + tiny / 2) *
                 std::fabs(qkv[at(j, 2, d)]);
          const double o = out[row(i, d)];
          bounds.out[row(i, d)] = u * std::fabs(o) + tiny / 2 + 1.01 * m;
          dD += std::fabs(dout[row(i, d)]) * bounds.out[row(i, d)];
          dot_abs += std::fabs(dout[row(i, d)] * o);
        }
        dD += (H + 2) * e * dot_abs;
        double D = 0;
        for (int d = 0; d < H; d++) D += dout[row(i, d)] * out[row(i, d)];
        for (int j = 0; j <= i; j++) {
          const double p = P[static_cast<size_t>(i) * T + j];
          double dP = 0, dP_abs = 0;
          for (int d = 0; d < H; d++) {
            dP += dout[row(i, d)] * qkv[at(j, 2, d)];
            dP_abs += std::fabs(dout[row(i, d)] * qkv[at(j, 2, d)]);
          }
          const double dS = p * (dP - D), pij = pe[static_cast<size_t>(i) * T + j];
          const double err = u * std::fabs(dS) + tiny / 2 + p * (dD + (H + 2) * e * dP_abs + pij * std::fabs(dP - D)) +
                             fp32_sum * std::fabs(dS);
          for (int d = 0; d < H; d++) {
            bounds.dqkv[at(i, 0, d)] += 1.01 * scale * err * std::fabs(qkv[at(j, 1, d)]);
            bounds.dqkv[at(j, 1, d)] += 1.01 * scale * err * std::fabs(qkv[at(i, 0, d)]);
            bounds.dqkv[at(j, 2, d)] +=
                1.01 * (((u + pij + fp32_sum) * p + tiny / 2) * std::fabs(dout[row(i, d)]));
          }
        }
      }
    }
  }
  for (size_t i = 0; i < dqkv.size(); i++) bounds.dqkv[i] += u * std::fabs(dqkv[i]) + tiny / 2;  // the rounding when stored
  return bounds;
}

// Runs check(E{}) at E = bf16, then at E = fp16, each failure naming its type.
template <class F>
void for_both_types(F&& check) {
  {
    SCOPED_TRACE("bf16");
    check(bf16{});
  }
  SCOPED_TRACE("fp16");
  check(fp16{});
}

template <class E>
void check_against_references(const Shape& shape) {
  const FlashRun<E> run(shape, 80);
  const int B = shape.B, T = shape.T;
  const kernels::AttentionHeads heads = run.heads;
  const double tolerance = kTolerance<E>;
  std::printf("%s\n", simt::named<E>("", "bf16", "fp16"));
  HostLaunch launch;

  // The twin: fp32 on the values in E, outputs rounded to E as the path stores them.
  FVec twin_out(run.outs), twin_lse(run.stats), twin_dqkv(run.qkvs);
  cpu::flash_attention_forward(twin_out.data(), twin_lse.data(), run.qkv_f.data(), B, T, heads);
  twin_out = rounded<E>(twin_out);
  cpu::flash_attention_backward(twin_dqkv.data(), run.dout_f.data(), run.qkv_f.data(), twin_out.data(),
                                twin_lse.data(), B, T, heads);
  twin_dqkv = rounded<E>(twin_dqkv);
  // float64 from the same values in E, unrounded.
  const Vec qkv64 = to_double(run.qkv_f), dout64 = to_double(run.dout_f);
  Vec ref_out(run.outs), ref_lse(run.stats), att(run.stats * T), ref_dqkv(run.qkvs), flash_out(run.outs);
  cpu::materialised_attention_forward(ref_out.data(), att.data(), qkv64.data(), B, T, heads);
  cpu::materialised_attention_backward(ref_dqkv.data(), dout64.data(), qkv64.data(), att.data(), B, T, heads);
  cpu::flash_attention_forward(flash_out.data(), ref_lse.data(), qkv64.data(), B, T, heads);  // lse in double

  std::vector<E> out;
  FVec lse;
  run.forward(launch, out, lse);
  const ElementBounds bounds = element_bounds<E>(shape, qkv64, dout64, att, ref_out, ref_lse, ref_dqkv);
  expect_each_close("out vs float64, element by element", to_double(out), ref_out,
                    [&](size_t i) { return bounds.out[i]; });
  expect_close_printed("out vs float64", to_double(out), ref_out, tolerance);
  expect_close_printed("lse vs float64", to_double(lse), ref_lse, kLseTolerance);
  expect_close_printed("out vs CPU twin", to_double(out), to_double(twin_out), tolerance);
  expect_close_printed("lse vs CPU twin", to_double(lse), to_double(twin_lse), kLseTolerance);

  // After the interpreted forward, the op pair against float64, each part of dqkv apart.
  const Vec dqkv = to_double(run.backward(launch, out, lse));
  expect_each_close("dqkv vs float64, element by element", dqkv, ref_dqkv, [&](size_t i) { return bounds.dqkv[i]; });
  // Backward on its own: from the twin's out and lse, as the twin's backward ran.
  const Vec dqkv_twin_in = to_double(run.backward(launch, to16<E>(twin_out), twin_lse));
  const Vec twin_dqkv64 = to_double(twin_dqkv);
  const char* names[3] = {"dq", "dk", "dv"};
  for (int part = 0; part < 3; part++) {
    const std::string name = names[part];
    expect_close_printed(name + " vs float64", part_of(dqkv, part, heads), part_of(ref_dqkv, part, heads), tolerance);
    expect_close_printed(name + " vs CPU twin", part_of(dqkv_twin_in, part, heads), part_of(twin_dqkv64, part, heads),
                         tolerance);
  }
}

class GpuFlash16Interpreted : public ::testing::TestWithParam<Shape> {};

TEST_P(GpuFlash16Interpreted, MatchesFloat64AndTheCpuTwin) {
  for_both_types([&](auto e) { check_against_references<decltype(e)>(GetParam()); });
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuFlash16Interpreted,
                         ::testing::Values(Shape{2, 37, 128, 2},   // hs 64: one partial block
                                           Shape{2, 70, 256, 2},   // hs 128: key tiles 64 + 6
                                           Shape{2, 130, 128, 2},  // hs 64: blocks 128 + 2
                                           Shape{2, 130, 256, 2},  // hs 128: backward steps 4 x 32 + 2
                                           Shape{1, 290, 256, 2},  // hs 128: blocks 128 + 128 + 34
                                           // grouped-query: 2 query heads per K/V head (dK/dV's
                                           // steps run on from one head to the next: 3 + 3 at
                                           // hs 64 and T 130), and one K/V head for all
                                           Shape{1, 37, 256, 4, 2},    // hs 64: dQ in one step
                                           Shape{2, 130, 256, 4, 2},   // hs 64
                                           Shape{1, 70, 256, 4, 1},    // hs 64
                                           Shape{1, 70, 512, 4, 2}),   // hs 128: steps 3 + 3
                         [](const auto& info) {
                           const Shape& s = info.param;
                           char text[64];
                           std::snprintf(text, sizeof text, "B%d_T%d_C%d_NH%d", s.B, s.T, s.C, s.NH);
                           std::string name = text;
                           if (s.NKV) name += "_NKV" + std::to_string(s.NKV);
                           return name;
                         });

// The products run on the tensor cores, and a warp runs only those of the staged tiles that some
// of its 16 rows (before T) sees, key <= query: T = 70 at hs 64, counted here from that rule
// alone, warp by warp: 6 (warp, key tile) pairs in the forward (S = Q K^T and O += P V, each
// 2 x 16 x 64 x 64 FLOPs; the warps at rows 0-63 see key tile 0 only, the one at 64-69 both),
// 9 (warp, query step) pairs in dK/dV (4 products: S^T, dP^T, dV, dK) and 6 (warp, key step)
// pairs in dQ (3: S, dP, dQ), where every tile of every warp before T would be 10 each.
TEST(GpuFlash16Interpreted, TheTileProductsRunOnMmaAtOrBelowTheDiagonalOnly) {
  for_both_types([](auto e) {
    using E = decltype(e);
    const int T = 70, kBlockRows = 128, kWarpRows = 16, kTile = 64;
    const FlashRun<E> run({1, T, 128, 2}, 83);
    HostLaunch launch;
    std::vector<E> out;
    FVec lse;
    run.forward(launch, out, lse);
    run.backward(launch, out, lse);
    uint64_t forward = 0, dkdv = 0, dq = 0;
    for (int w0 = 0; w0 < T; w0 += kWarpRows) {
      const int last = std::min(w0 + kWarpRows, T) - 1, block0 = w0 / kBlockRows * kBlockRows;
      const int block_end = std::min(block0 + kBlockRows, T);
      for (int c0 = 0; c0 < block_end; c0 += kTile) forward += c0 <= last;     // key tiles of the queries
      for (int r0 = block0; r0 < T; r0 += kTile) dkdv += r0 + kTile - 1 >= w0;  // query steps of the keys
      for (int c0 = 0; c0 < block_end; c0 += kTile) dq += c0 <= last;
    }
    EXPECT_EQ(forward, 6u);
    EXPECT_EQ(dkdv, 9u);
    EXPECT_EQ(dq, 6u);
    const auto& counts = launch.kernel_counts();
    const uint64_t product = 2ull * kWarpRows * kTile * 64, heads = 2;
    EXPECT_EQ(counts.at(gpu_ops::flash::ForwardKernel<E, 64>::kName).mma_flops, heads * forward * 2 * product);
    EXPECT_EQ(counts.at(gpu_ops::flash::BackwardDkdvKernel<E, 64>::kName).mma_flops, heads * dkdv * 4 * product);
    EXPECT_EQ(counts.at(gpu_ops::flash::BackwardDqKernel<E, 64>::kName).mma_flops, heads * dq * 3 * product);
    EXPECT_EQ(counts.at(gpu_ops::flash::DeltaKernel<E>::kName).launches, 1u);
    EXPECT_EQ(counts.size(), 4u);
  });
}

// Deterministic: no atomics, every sum in a fixed order (dK and dV over a group's query heads
// too); a second run gives the same bits.
void expect_rerun_bit_identical(const Shape& shape) {
  for_both_types([&](auto e) {
    using E = decltype(e);
    const FlashRun<E> run(shape, 81);
    std::vector<E> out[2], dqkv[2];
    FVec lse[2];
    for (int i = 0; i < 2; i++) {
      HostLaunch launch;
      run.forward(launch, out[i], lse[i]);
      dqkv[i] = run.backward(launch, out[i], lse[i]);
    }
    for (const std::vector<E>* v : {&out[0], &dqkv[0]})  // written everywhere, so the bits compared are results
      for (float x : to_float(*v)) ASSERT_TRUE(std::isfinite(x));
    for (float x : lse[0]) ASSERT_TRUE(std::isfinite(x));
    EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(E)), 0);
    EXPECT_EQ(std::memcmp(lse[0].data(), lse[1].data(), lse[0].size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(dqkv[0].data(), dqkv[1].data(), dqkv[0].size() * sizeof(E)), 0);
  });
}
TEST(GpuFlash16Interpreted, RerunIsBitIdentical) { expect_rerun_bit_identical({2, 70, 128, 2}); }
TEST(GpuFlash16Interpreted, GroupedQueryRerunIsBitIdentical) { expect_rerun_bit_identical({1, 130, 256, 4, 1}); }

// A head size the kernels are not compiled for is refused in one line, before any launch.
TEST(GpuFlash16Interpreted, RefusesHeadSize96) {
  for_both_types([](auto e) {
    using E = decltype(e);
    const FlashRun<E> run({1, 4, 192, 2}, 82);  // hs 96
    HostLaunch launch;
    std::vector<E> out;
    FVec lse;
    for (bool forward : {true, false}) {
      try {
        if (forward) run.forward(launch, out, lse);
        else run.backward(launch, std::vector<E>(run.outs), FVec(run.stats));
        FAIL() << "hs 96 was accepted";
      } catch (const std::invalid_argument& error) {
        const std::string what = error.what();
        EXPECT_NE(what.find("head size 96"), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      }
    }
    EXPECT_TRUE(launch.kernel_counts().empty());
  });
}

}  // namespace
}  // namespace eth::test

// The GPU attention ops (kernels/gpu_ops/attention.hpp), the very kernels and launches the CUDA
// backend runs, executed by the kernel interpreter through HostLaunch: against their CPU twin
// (kernels/cpu/flash_attention.cpp, in float) and a float64 reference (the materialised double
// kernels, themselves checked against an independent softmax in test_attention.cpp), on shapes
// that are not multiples of the tiles, with every output poisoned (NaN) first; plus a rerun that
// must be bit-identical, the head-size dispatch and the shape it refuses.
//
// Shapes (B, T, C, NH[, NKV]), hs = C / NH, one per family and the hs < H case, and grouped-query
// ones (NKV < NH K/V heads: dK and dV summed over each group's query heads): T = 37 is one partial tile; T = 70
// is a full 64-row tile and 6 rows (hs 64), or two 32-row tiles and 6 rows (hs 128), with
// partial staged sub-tiles in backward (16 and 8 rows). Cost: the interpreter runs every GPU
// thread as a fiber, about 1 us per thread per barrier or shuffle; the shapes keep the whole
// file at a few seconds with OMP_NUM_THREADS=1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/gpt_ops.hpp"
#include "kernels/emulated/host_launch.hpp"
#include "kernels/gpu_ops/attention.hpp"
#include "tests/unit/gradcheck.hpp"

namespace eth::test {
namespace {

namespace cpu = eth::kernels::cpu;
namespace gpu_ops = eth::kernels::gpu_ops;
using kernels::emulated::HostLaunch;
using Vec = std::vector<double>;
using FVec = std::vector<float>;

// Norm-wise relative error ||ours - ref|| / ||ref||, the bound of tests/gpu/cuda_checks.hpp's
// kFp32 that the CUDA kernels are held to against the CPU twin. Both sides (and the float64
// reference, exact to fp32's eyes) differ only by fp32 rounding: each output is a softmax-
// weighted mean (forward) or a sum of at most T products (backward) of O(1) values, every
// operation rounded to fp32 (unit roundoff 6e-8), dot products over the head summed in another
// order (the GPU kernels sum hs / G dims per thread, then a butterfly over the G threads of a
// row), exponentials within 2 ulp of each other: a few 1e-7 for these sizes. 1e-5 leaves that
// margin, while a wrong mask, tile edge, head dim or group lane shows at 1e-2 or more.
constexpr double kFp32Tolerance = 1e-5;

struct Shape {
  int B, T, C, NH;
  int NKV = 0;  // K/V heads; 0: NH (multi-head)
  kernels::AttentionHeads heads() const { return {NH, NKV ? NKV : NH, C / NH}; }
};
void PrintTo(const Shape& s, std::ostream* os) {
  *os << "B " << s.B << " T " << s.T << " C " << s.C << " NH " << s.NH << " NKV " << s.heads().NKV;
}

FVec to_float(const Vec& v) { return FVec(v.begin(), v.end()); }
Vec to_double(const FVec& v) { return Vec(v.begin(), v.end()); }
FVec nans(size_t n) {
  FVec v(n);
  poison(v);
  return v;
}

// expect_close_printed on a float result.
void check(const std::string& name, const FVec& ours, const Vec& ref, double tol) {
  expect_close_printed(name, to_double(ours), ref, tol);
}

// One shape's inputs (random, non-zero, in fp32 so that every side reads the same values) and
// what each side computes from them.
struct AttentionRun {
  Shape s;
  kernels::AttentionHeads heads;
  size_t outs, qkvs, stats;  // elements of out (B, T, NH hs), qkv (B, T, (NH + 2 NKV) hs), lse
  FVec qkv, dout;
  AttentionRun(const Shape& shape, uint64_t seed)
      : s(shape),
        heads(shape.heads()),
        outs(static_cast<size_t>(shape.B) * shape.T * heads.out_row()),
        qkvs(static_cast<size_t>(shape.B) * shape.T * heads.qkv_row()),
        stats(static_cast<size_t>(shape.B) * shape.NH * shape.T),
        // scale 2: scores up to a few units, so the softmax is peaked and the running max moves
        qkv(to_float(random_vector(qkvs, seed, 2.0))),
        dout(to_float(random_vector(outs, seed + 1))) {}

  // out and lse of the interpreted forward, from outputs poisoned with NaN.
  void forward(HostLaunch& launch, FVec& out, FVec& lse) const {
    out = nans(outs), lse = nans(stats);
    gpu_ops::attention_forward(launch, out.data(), lse.data(), qkv.data(), s.B, s.T, heads);
  }
  // dqkv of the interpreted backward from the given out and lse, poisoned first.
  FVec backward(HostLaunch& launch, const FVec& out, const FVec& lse) const {
    FVec dqkv = nans(qkvs);
    gpu_ops::attention_backward(launch, dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), s.B, s.T, heads);
    return dqkv;
  }
};

class GpuAttentionInterpreted : public ::testing::TestWithParam<Shape> {};

TEST_P(GpuAttentionInterpreted, MatchesCpuTwinAndFloat64) {
  const AttentionRun run(GetParam(), 90);
  const int B = GetParam().B, T = GetParam().T;
  const kernels::AttentionHeads heads = run.heads;
  HostLaunch launch;

  // The CPU twin in float, and the float64 reference from the same (fp32) inputs.
  FVec cpu_out(run.outs), cpu_lse(run.stats), cpu_dqkv(run.qkvs);
  cpu::flash_attention_forward(cpu_out.data(), cpu_lse.data(), run.qkv.data(), B, T, heads);
  cpu::flash_attention_backward(cpu_dqkv.data(), run.dout.data(), run.qkv.data(), cpu_out.data(), cpu_lse.data(), B,
                                T, heads);
  const Vec qkv64 = to_double(run.qkv), dout64 = to_double(run.dout);
  Vec ref_out(run.outs), ref_lse(run.stats), att(run.stats * T), ref_dqkv(run.qkvs), flash_out(run.outs);
  cpu::materialised_attention_forward(ref_out.data(), att.data(), qkv64.data(), B, T, heads);
  cpu::materialised_attention_backward(ref_dqkv.data(), dout64.data(), qkv64.data(), att.data(), B, T, heads);
  cpu::flash_attention_forward(flash_out.data(), ref_lse.data(), qkv64.data(), B, T, heads);  // lse in double

  FVec out, lse;
  run.forward(launch, out, lse);
  check("out vs CPU twin", out, to_double(cpu_out), kFp32Tolerance);
  check("lse vs CPU twin", lse, to_double(cpu_lse), kFp32Tolerance);
  check("out vs float64", out, ref_out, kFp32Tolerance);
  check("lse vs float64", lse, ref_lse, kFp32Tolerance);

  // Backward on its own: from the CPU twin's out and lse, as the CPU twin's backward ran.
  check("dqkv vs CPU twin", run.backward(launch, cpu_out, cpu_lse), to_double(cpu_dqkv), kFp32Tolerance);
  // And after the interpreted forward, the whole op pair against float64.
  check("dqkv vs float64", run.backward(launch, out, lse), ref_dqkv, kFp32Tolerance);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuAttentionInterpreted,
                         ::testing::Values(Shape{2, 37, 48, 2},    // hs 24 < H = 32: one thread per row
                                           Shape{2, 37, 96, 2},    // hs 48 < H = 64: 2 threads per row
                                           Shape{1, 70, 128, 2},   // hs 64: 64 + 6 rows
                                           Shape{1, 70, 256, 2},   // hs 128: 4 threads per row, 32 + 32 + 6
                                           // the shapes of tests/gpu/cuda_checks.cpp's attention check
                                           Shape{3, 70, 96, 4},    // hs 24
                                           Shape{2, 130, 256, 4},  // hs 64: 64 + 64 + 2 rows
                                           Shape{2, 45, 256, 2},   // hs 128: 32 + 13 rows
                                           // grouped-query: 2 query heads per K/V head, and one
                                           // K/V head for all (multi-query), in each family
                                           Shape{2, 37, 96, 4, 2},    // hs 24
                                           Shape{1, 70, 256, 4, 2},   // hs 64
                                           Shape{1, 70, 256, 4, 1},   // hs 64
                                           Shape{1, 45, 512, 4, 1}),  // hs 128
                         [](const auto& info) {
                           const Shape& s = info.param;
                           char text[64];
                           std::snprintf(text, sizeof text, "B%d_T%d_C%d_NH%d", s.B, s.T, s.C, s.NH);
                           std::string name = text;
                           if (s.NKV) name += "_NKV" + std::to_string(s.NKV);
                           return name;
                         });

// The head size picks the family (the smallest H >= hs): one launch of each of its kernels.
TEST(GpuAttentionInterpreted, HeadSizePicksTheKernelFamily) {
  for (const auto& [C, H] : {std::pair{64, 32}, std::pair{66, 64}, std::pair{256, 128}}) {  // hs 32, 33, 128
    const AttentionRun r({1, 5, C, 2}, 91);
    HostLaunch launch;
    FVec out, lse;
    r.forward(launch, out, lse);
    r.backward(launch, out, lse);
    const auto& counts = launch.kernel_counts();
    ASSERT_EQ(counts.size(), 3u) << "hs " << C / 2;
    for (const std::string kernel : {"attention_forward", "attention_backward_dkdv", "attention_backward_dq"}) {
      const std::string name = kernel + "<" + std::to_string(H) + ">";
      ASSERT_TRUE(counts.count(name)) << "hs " << C / 2 << ": no launch of " << name;
      EXPECT_EQ(counts.at(name).launches, 1u) << name;
    }
  }
}

// Deterministic: no atomics, every sum in a fixed order (dK and dV over a group's query heads
// too); a second run gives the same bits.
void expect_rerun_bit_identical(const Shape& shape) {
  const AttentionRun run(shape, 92);
  FVec out[2], lse[2], dqkv[2];
  for (int i = 0; i < 2; i++) {
    HostLaunch launch;
    run.forward(launch, out[i], lse[i]);
    dqkv[i] = run.backward(launch, out[i], lse[i]);
  }
  for (const FVec* v : {&out[0], &lse[0], &dqkv[0]})  // written everywhere, so the bits compared are results
    for (float x : *v) ASSERT_TRUE(std::isfinite(x));
  EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(lse[0].data(), lse[1].data(), lse[0].size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(dqkv[0].data(), dqkv[1].data(), dqkv[0].size() * sizeof(float)), 0);
}
TEST(GpuAttentionInterpreted, RerunIsBitIdentical) { expect_rerun_bit_identical({1, 70, 256, 2}); }
TEST(GpuAttentionInterpreted, GroupedQueryRerunIsBitIdentical) { expect_rerun_bit_identical({1, 70, 256, 4, 2}); }

// A head size past the largest family is refused in one line, before any launch.
TEST(GpuAttentionInterpreted, RefusesHeadSizeAbove128) {
  const AttentionRun run({1, 4, 258, 2}, 93);  // hs 129
  HostLaunch launch;
  FVec out, lse;
  try {
    run.forward(launch, out, lse);
    FAIL() << "hs 129 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("head size 129"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(launch.kernel_counts().empty());
}

}  // namespace
}  // namespace eth::test

// Incremental attention (Backend::attention_decode, kernels/cpu/decode_attention.cpp) against
// the float64 causal attention of the whole sequence (the materialised double kernel, itself
// checked against an independent softmax in test_attention.cpp), on random non-zero data. The
// sequence arrives in chunks, as generation feeds it: a prefill of several rows, then single
// rows and a chunk of three; every output is poisoned (NaN) before the call, and so is every
// cache position the call must not read yet (at or after T0 + Tn), so a missed write or a read
// past the causal edge shows as NaN. Multi-head and grouped-query heads (NKV < NH K/V heads in
// the caches, each read by NH / NKV query heads).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/emulated/cuda_emulated_backend.hpp"
#include "kernels/twin_backend.hpp"
#include "kernels/cpu/gpt_ops.hpp"
#include "tests/unit/gradcheck.hpp"

namespace eth::test {
namespace {

namespace ops = eth::kernels::cpu;
using Vec = std::vector<double>;

struct Shape {
  int B, T, C, NH;  // C: the query width, NH hs
  int NKV = 0;      // K/V heads; 0: NH (multi-head)
  kernels::AttentionHeads heads() const { return {NH, NKV ? NKV : NH, C / NH}; }
  size_t qkv_floats() const { return static_cast<size_t>(B) * T * heads().qkv_row(); }
};

// The whole sequence's attention output (B, T, C), in double.
Vec reference_out(const Vec& qkv, const Shape& s) {
  Vec out(static_cast<size_t>(s.B) * s.T * s.C), att(static_cast<size_t>(s.B) * s.NH * s.T * s.T);
  ops::materialised_attention_forward(out.data(), att.data(), qkv.data(), s.B, s.T, s.heads());
  return out;
}

// Rows [t0, t0 + n) of each sample of a (B, T, width) tensor: (B, n, width).
template <typename F, typename G>
std::vector<F> rows_of(const std::vector<G>& x, const Shape& s, int width, int t0, int n) {
  std::vector<F> out;
  for (int b = 0; b < s.B; b++) {
    const auto* first = x.data() + (static_cast<size_t>(b) * s.T + t0) * width;
    out.insert(out.end(), first, first + static_cast<size_t>(n) * width);
  }
  return out;
}

// Feeds the sequence in `chunks` to `decode` (the op's signature, in F); returns the output
// rows of every call, stitched back into (B, T, C), in double.
template <typename F, typename Decode>
Vec decode_in_chunks(const Vec& qkv, const Shape& s, const std::vector<int>& chunks, Decode decode) {
  const kernels::AttentionHeads heads = s.heads();
  const size_t cache_floats = static_cast<size_t>(s.B) * heads.NKV * s.T * heads.hs;  // (B, NKV, T, hs)
  std::vector<F> k(cache_floats), v(cache_floats);
  poison(k), poison(v);  // nothing is cached yet: any read before a write is NaN
  Vec out(static_cast<size_t>(s.B) * s.T * s.C);
  int t0 = 0;
  for (int n : chunks) {
    const std::vector<F> q = rows_of<F>(qkv, s, static_cast<int>(heads.qkv_row()), t0, n);  // (B, n, (NH + 2 NKV) hs)
    std::vector<F> o(static_cast<size_t>(s.B) * n * s.C);
    poison(o);
    decode(o.data(), k.data(), v.data(), q.data(), s.B, n, t0, s.T, heads);
    for (int b = 0; b < s.B; b++)
      for (size_t i = 0; i < static_cast<size_t>(n) * s.C; i++)
        out[(static_cast<size_t>(b) * s.T + t0) * s.C + i] = o[static_cast<size_t>(b) * n * s.C + i];
    t0 += n;
  }
  EXPECT_EQ(t0, s.T);
  return out;
}

constexpr Shape kShape{2, 12, 48, 3};                     // hs 16
const std::vector<int> kChunks = {5, 1, 1, 3, 1, 1};      // a prefill, steps, a chunk of three
// Grouped-query: 2 query heads per K/V head, and one K/V head for all (multi-query).
constexpr Shape kGroupedShapes[] = {{2, 12, 64, 4, 2}, {2, 12, 64, 4, 1}};  // hs 16

// fp32 against float64: each output is a softmax-weighted mean of at most T = 12 O(1) values,
// each product and sum rounded to fp32 (unit roundoff 6e-8), plus expf's ~1e-7: the norm-wise
// error is expected at a few 1e-7. 1e-5 leaves that margin, while a wrong causal edge,
// a stale cache row or a missing scale shows at 1e-2 or more. The same bound as the training
// attention's (test_attention.cpp).
constexpr double kFp32Tolerance = 1e-5;

TEST(AttentionDecode, MatchesFloat64ReferenceOnTheCpuBackend) {
  const Vec qkv = random_vector(kShape.qkv_floats(), 70, 2.0);
  const std::unique_ptr<kernels::Backend> cpu = kernels::make_cpu_backend();
  const Vec out = decode_in_chunks<float>(qkv, kShape, kChunks, [&](auto... a) { cpu->attention_decode(a...); });
  expect_close("out", out, reference_out(qkv, kShape), kFp32Tolerance);
}

// The GPU kernel (kernels/gpu_ops/attention_decode.hpp) in the kernel interpreter, at the same bound.
TEST(AttentionDecode, InterpretedGpuKernelMatchesToo) {
  const Vec qkv = random_vector(kShape.qkv_floats(), 73, 2.0);
  const std::unique_ptr<kernels::Backend> gpu = kernels::make_cuda_emulated_backend();
  const Vec out = decode_in_chunks<float>(qkv, kShape, kChunks, [&](auto... a) { gpu->attention_decode(a...); });
  expect_close("out", out, reference_out(qkv, kShape), kFp32Tolerance);
}

// Grouped-query heads, on the CPU backend and on the GPU kernel in the interpreter; and the GPU
// kernel's bits do not depend on the chunks but through the cache it reads: a rerun is the same.
TEST(AttentionDecode, GroupedQueryHeadsMatchFloat64) {
  const std::unique_ptr<kernels::Backend> cpu = kernels::make_cpu_backend();
  const std::unique_ptr<kernels::Backend> gpu = kernels::make_cuda_emulated_backend();
  for (const Shape& s : kGroupedShapes) {
    SCOPED_TRACE("NKV " + std::to_string(s.NKV));
    const Vec qkv = random_vector(s.qkv_floats(), 74, 2.0), ref = reference_out(qkv, s);
    expect_close("out, CPU", decode_in_chunks<float>(qkv, s, kChunks, [&](auto... a) { cpu->attention_decode(a...); }),
                 ref, kFp32Tolerance);
    const Vec out = decode_in_chunks<float>(qkv, s, kChunks, [&](auto... a) { gpu->attention_decode(a...); });
    expect_close("out, interpreted GPU kernel", out, ref, kFp32Tolerance);
    EXPECT_EQ(out, decode_in_chunks<float>(qkv, s, kChunks, [&](auto... a) { gpu->attention_decode(a...); }));
  }
}

TEST(AttentionDecode, AsynchronousCpuBackendMatchesToo) {
  const Vec qkv = random_vector(kShape.qkv_floats(), 71, 2.0);
  const std::unique_ptr<kernels::Backend> cpu = kernels::make_async_cpu_backend();
  const Vec out = decode_in_chunks<float>(qkv, kShape, kChunks, [&](auto... a) {
    cpu->attention_decode(a...);
    cpu->synchronize();
  });
  expect_close("out", out, reference_out(qkv, kShape), kFp32Tolerance);
}

// In double the incremental kernel is the whole-sequence attention up to summation order:
// anything beyond rounding (1e-16 per operation, sums of at most T terms) is a bug.
TEST(AttentionDecode, EqualsWholeSequenceAttentionInDouble) {
  const Shape s{1, 9, 32, 2};
  const auto decode = [](double* o, double* k, double* v, const double* q, int B, int Tn, int T0, int Tmax,
                         eth::kernels::AttentionHeads heads) {
    ops::attention_decode<double>(o, k, v, q, B, Tn, T0, Tmax, heads);
  };
  const Vec qkv = random_vector(s.qkv_floats(), 72, 2.0);
  const Vec one_by_one = decode_in_chunks<double>(qkv, s, std::vector<int>(9, 1), decode);
  expect_close("out, one row at a time", one_by_one, reference_out(qkv, s), 1e-12);
  const Vec at_once = decode_in_chunks<double>(qkv, s, {9}, decode);
  expect_close("out, all rows at once", at_once, reference_out(qkv, s), 1e-12);
}

// The bf16 twin rounds the output, as it rounds attention_forward's: every element is then a
// bf16 value, within bf16's half-ulp (2^-9 relative) of the fp32 result.
TEST(AttentionDecode, Bf16TwinRoundsTheOutput) {
  const Vec qkv = random_vector(kShape.qkv_floats(), 73, 2.0);
  const std::unique_ptr<kernels::Backend> bf16 = kernels::make_twin_backend(kernels::make_cpu_backend(), kernels::Precision::bf16);
  const Vec out = decode_in_chunks<float>(qkv, kShape, kChunks, [&](auto... a) { bf16->attention_decode(a...); });
  for (double x : out) {
    float rounded = static_cast<float>(x);
    bf16->round_to(kernels::ElementType::bf16, &rounded, &rounded, 1);
    ASSERT_EQ(static_cast<float>(x), rounded) << "an output that is not a bf16 value";
  }
  expect_close("out", out, reference_out(qkv, kShape), 1.0 / 256);
}

}  // namespace
}  // namespace eth::test

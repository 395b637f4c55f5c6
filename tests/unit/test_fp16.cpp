// fp16 rounding (kernels/fp16.hpp), the primitive of the fp16 path's CPU twin and of the kernel
// interpreter: against the compiler's own float -> _Float16 conversion (GCC's, round to nearest
// even, IEEE 754's binary16), on every fp16 value, on random float bit patterns and on the edges
// (the largest finite value, overflow, the subnormals, ties); and the CPU backend's round_to and
// convert on fp16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/fp16.hpp"
#ifdef ETH_HAVE_SIMT_INTERPRETER
#include "kernels/emulated/cuda_emulated_backend.hpp"
#endif

namespace eth::test {
namespace {

using kernels::fp16_bits;
using kernels::fp16_to_float;

float from_bits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}
// The compiler's conversion, the reference.
uint16_t reference_bits(float x) {
  const _Float16 h = static_cast<_Float16>(x);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}
bool is_nan_bits(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// Every fp16 value widens exactly and narrows back to itself; a NaN stays a NaN.
TEST(Fp16Rounding, EveryValueRoundTrips) {
  for (uint32_t h = 0; h <= 0xffffu; h++) {
    const float x = fp16_to_float(static_cast<uint16_t>(h));
    if (is_nan_bits(static_cast<uint16_t>(h))) {
      ASSERT_TRUE(std::isnan(x)) << h;
      ASSERT_TRUE(is_nan_bits(fp16_bits(x))) << h;
      continue;
    }
    const _Float16 r = static_cast<_Float16>(x);
    ASSERT_EQ(static_cast<float>(r), x) << h;  // the widening agrees with the compiler's
    ASSERT_EQ(fp16_bits(x), h) << h;
  }
}

// Four million random float bit patterns, and the floats from 2^-26 to 2^18 at eight points per
// fp16 ulp (so every tie among them; fp16 normal, subnormal and overflowing alike): the same bits
// as the compiler's.
TEST(Fp16Rounding, EqualsTheCompilersConversion) {
  std::mt19937 rng(7);
  for (int i = 0; i < 4000000; i++) {
    const float x = from_bits(rng());
    if (std::isnan(x)) {
      ASSERT_TRUE(is_nan_bits(fp16_bits(x)));
      continue;
    }
    ASSERT_EQ(fp16_bits(x), reference_bits(x)) << x;
  }
  for (uint32_t exponent = 127 - 26; exponent <= 127 + 17; exponent++)
    for (uint32_t mantissa = 0; mantissa < (1u << 23); mantissa += 1u << 10) {
      const float x = from_bits((exponent << 23) | mantissa);
      ASSERT_EQ(fp16_bits(x), reference_bits(x)) << x;
      ASSERT_EQ(fp16_bits(-x), reference_bits(-x)) << -x;
    }
}

TEST(Fp16Rounding, Edges) {
  EXPECT_EQ(fp16_bits(65504.f), 0x7bffu);                      // the largest finite value stays
  EXPECT_EQ(fp16_bits(std::nextafter(65520.f, 0.f)), 0x7bffu);  // below half an ulp past it: down
  EXPECT_EQ(fp16_bits(65520.f), 0x7c00u);                      // the tie: to even, infinity
  EXPECT_EQ(fp16_bits(std::numeric_limits<float>::max()), 0x7c00u);
  EXPECT_EQ(fp16_bits(-std::numeric_limits<float>::infinity()), 0xfc00u);
  EXPECT_EQ(fp16_bits(std::ldexp(1.f, -24)), 0x0001u);          // the smallest subnormal
  EXPECT_EQ(fp16_bits(std::ldexp(1.f, -25)), 0x0000u);          // half of it: a tie, to even (0)
  EXPECT_EQ(fp16_bits(std::nextafter(std::ldexp(1.f, -25), 1.f)), 0x0001u);
  EXPECT_EQ(fp16_bits(std::ldexp(3.f, -25)), 0x0002u);          // 1.5 units: a tie, to even (2)
  EXPECT_EQ(fp16_bits(std::ldexp(1.f, -14)), 0x0400u);          // the smallest normal
  EXPECT_EQ(fp16_bits(std::ldexp(1023.5f, -24)), 0x0400u);      // the largest subnormal's tie: up
  EXPECT_EQ(fp16_bits(-0.f), 0x8000u);
  EXPECT_EQ(fp16_bits(1.f + std::ldexp(1.f, -11)), 0x3c00u);    // 1 + u: a tie, to even (1)
  EXPECT_EQ(fp16_bits(1.f + std::ldexp(3.f, -11)), 0x3c02u);    // 1 + 3u: a tie, to even (1 + 4u)
  EXPECT_EQ(fp16_to_float(0x0001u), std::ldexp(1.f, -24));
  EXPECT_EQ(fp16_to_float(0x7bffu), 65504.f);
}

// The CPU backends' round_to (in and out of place) and convert, both ways, on values across
// fp16's range: the primitive's results.
TEST(Fp16Rounding, BackendPrimitives) {
  for (auto make : {kernels::make_cpu_backend, kernels::make_async_cpu_backend}) {
    auto backend = make(0);
    std::mt19937 rng(3);
    std::vector<float> x(100000);
    for (float& v : x) v = std::ldexp(std::uniform_real_distribution<float>(-1.f, 1.f)(rng), int(rng() % 44) - 26);
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); i++) want[i] = fp16_to_float(fp16_bits(x[i]));
    kernels::DeviceBuffer<float> a(*backend, x.size()), b(*backend, x.size()), c(*backend, x.size());
    kernels::DeviceBuffer<kernels::fp16> h(*backend, x.size());
    backend->copy_to_device(a.data(), x.data(), x.size() * sizeof(float));
    backend->round_to(kernels::ElementType::f16, b.data(), a.data(), x.size());
    backend->convert(h.data(), a.data(), x.size());
    backend->convert(c.data(), h.data(), x.size());
    backend->round_to(kernels::ElementType::f16, a.data(), a.data(), x.size());
    std::vector<float> out_of_place(x.size()), in_place(x.size()), through(x.size());
    backend->copy_to_host(out_of_place.data(), b.data(), x.size() * sizeof(float));
    backend->copy_to_host(in_place.data(), a.data(), x.size() * sizeof(float));
    backend->copy_to_host(through.data(), c.data(), x.size() * sizeof(float));
    EXPECT_EQ(out_of_place, want) << backend->name();
    EXPECT_EQ(in_place, want) << backend->name();
    EXPECT_EQ(through, want) << backend->name();
  }
}

// bf16 rows arriving at an fp16 stage (lib/runtime/stage_transfers.hpp), converted in place:
// finite values past fp16's range clamp to +-65504 and are counted, infinities and NaN stay, the
// rest round as convert does; the count adds to what the counter held. On the CPU backends and,
// where built, the CUDA backend's kernel in the interpreter.
TEST(Fp16Rounding, ConvertSaturatingClampsAndCounts) {
  std::vector<std::unique_ptr<kernels::Backend>> backends;
  backends.push_back(kernels::make_cpu_backend(0));
  backends.push_back(kernels::make_async_cpu_backend(0));
#ifdef ETH_HAVE_SIMT_INTERPRETER
  backends.push_back(kernels::make_cuda_emulated_backend());
#endif
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {1.5f, -3.25e-3f, 65504.f, 65536.f, -1e6f, 3e38f, inf, -inf, 70000.f, 1e-7f};
  std::mt19937 rng(5);
  for (int i = 0; i < 1000; i++) x.push_back(std::ldexp(std::uniform_real_distribution<float>(-1.f, 1.f)(rng), int(rng() % 34) - 20));  // below 2^14
  std::vector<kernels::bf16> stored(x.size());
  for (size_t i = 0; i < x.size(); i++) stored[i] = kernels::cpu::to_bf16(x[i]);
  stored.push_back(kernels::bf16{0x7fc1});  // a NaN
  size_t want_clamped = 0;
  std::vector<uint16_t> want;
  for (const kernels::bf16& b : stored) {
    const float v = kernels::cpu::to_float(b);
    const bool clamp = std::isfinite(v) && std::fabs(v) >= 65520.f;
    want_clamped += clamp;
    want.push_back(clamp ? fp16_bits(std::copysign(65504.f, v)) : fp16_bits(v));
  }
  ASSERT_EQ(want_clamped, 5u) << "65504 (65536 in bf16), 65536, -1e6, 3e38 and 70000";
  for (auto& backend : backends) {
    kernels::DeviceBuffer<uint16_t> rows(*backend, stored.size());
    kernels::DeviceBuffer<unsigned> count(*backend, 1);
    const unsigned before = 7;
    backend->copy_to_device(rows.data(), stored.data(), stored.size() * sizeof(uint16_t));
    backend->copy_to_device(count.data(), &before, sizeof before);
    backend->convert_saturating(kernels::Tensor(rows.data(), kernels::ElementType::f16),
                                kernels::ConstTensor(rows.data(), kernels::ElementType::bf16), stored.size(), count.data());
    std::vector<uint16_t> got(stored.size());
    unsigned counted = 0;
    backend->copy_to_host(got.data(), rows.data(), got.size() * sizeof(uint16_t));
    backend->copy_to_host(&counted, count.data(), sizeof counted);
    EXPECT_EQ(counted, before + want_clamped) << backend->name();
    for (size_t i = 0; i + 1 < got.size(); i++) ASSERT_EQ(got[i], want[i]) << backend->name() << " element " << i;
    EXPECT_TRUE(std::isnan(fp16_to_float(got.back()))) << backend->name();
  }
}

}  // namespace
}  // namespace eth::test

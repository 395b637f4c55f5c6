// The interpreter's race detector (kernels/simt/shared_shadow.hpp) and its seeded warp order:
// each kind of unordered shared-memory access between two threads of different warps fails the
// launch in one line naming both threads and both source lines, whichever warp the seed runs
// first; the same accesses with a barrier between pass; a cp.async destination is off limits
// until its issuer has waited; a race-free kernel gives the same bits for every seed, and the
// seeds do change which warp runs first.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "kernels/simt/interpreter.hpp"
#include "kernels/simt/simt.hpp"
#include "tests/unit/launch_error.hpp"

namespace simt = eth::kernels::simt;
using simt::Global;
using simt::Thread;

namespace {

std::string at_line(int line) { return "test_simt_races.cpp:" + std::to_string(line); }

// Thread 0 (warp 0) and thread 40 (warp 1) each access element 0 (for cp.async, the 16 bytes
// of elements 0-3), on the lines named below, with a barrier between them only where the
// pattern's name says so.
enum class Pattern {
  read_after_write,
  write_after_write,
  read_after_write_barrier,
  read_before_own_wait,
  read_in_flight_after_barrier,
  prefetch_into_read_tile,
  prefetch_after_barrier,
};

struct PairKernel {
  static constexpr const char* kName = "race_pair";
  struct Smem {
    alignas(16) simt::SharedArray<float, 4> x;
  };
  Global<float> out;        // (1) what the reads saw
  Global<const float> src;  // (4) the cp.async source
  Pattern pattern;
  // The source lines of the accesses (operator() below, counted from its first line).
  static constexpr int kBody = __LINE__ + 3;
  static constexpr int kRead40First = kBody + 7, kWrite0 = kBody + 9, kCopy0 = kBody + 10, kRead0 = kBody + 12,
                       kWrite40 = kBody + 15, kRead40 = kBody + 16;
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const int i = static_cast<int>(t.thread_idx().x);
    const bool async = pattern >= Pattern::read_before_own_wait, prefetch = pattern >= Pattern::prefetch_into_read_tile;
    const bool barrier = pattern == Pattern::read_after_write_barrier || pattern == Pattern::prefetch_after_barrier;
    const bool reads_last = pattern == Pattern::read_after_write || pattern == Pattern::read_after_write_barrier ||
                            pattern == Pattern::read_in_flight_after_barrier;
    if (i == 40 && prefetch) out[0] = s.x(0);
    if (pattern == Pattern::prefetch_after_barrier) t.sync();
    if (i == 0 && !async) s.x(0) = 1.f;
    if (i == 0 && async) t.cp_async<16>(&s.x(0), src.get());
    if (i == 0 && async) t.cp_async_commit();
    if (i == 0 && pattern == Pattern::read_before_own_wait) out[0] = s.x(1);
    if (i == 0 && async && pattern != Pattern::read_in_flight_after_barrier) t.cp_async_wait<0>();
    if (barrier || pattern == Pattern::read_in_flight_after_barrier) t.sync();
    if (i == 40 && pattern == Pattern::write_after_write) s.x(0) = 2.f;
    if (i == 40 && reads_last) out[0] = s.x(0);
    if (i == 0 && pattern == Pattern::read_in_flight_after_barrier) t.cp_async_wait<0>();
  }
};

// The launch's error over `seeds` seeds of the warp order.
std::vector<std::string> errors_over_seeds(Pattern pattern, int seeds) {
  alignas(16) const float src[4] = {3.f, 4.f, 5.f, 6.f};
  std::vector<std::string> errors;
  for (int seed = 0; seed < seeds; seed++) {
    float out = -1.f;
    simt::Interpreter interp;
    interp.set_schedule_seed(static_cast<uint64_t>(seed));
    errors.push_back(launch_error([&] {
      interp.launch(PairKernel{&out, src, pattern}, {simt::Dim3(1), simt::Dim3(64), sizeof(PairKernel::Smem)});
    }));
  }
  return errors;
}

constexpr const char* kThread0 = "thread 0 (warp 0, lane 0)";
constexpr const char* kThread40 = "thread 40 (warp 1, lane 8)";

// Every error is one line naming the kernel, both threads and both lines; `kinds` are the
// phrases that must each be seen over the seeds (one per order the warps ran in).
void expect_races(Pattern pattern, int first_line, int second_line, const std::vector<std::string>& kinds) {
  std::set<std::string> seen;
  for (const std::string& e : errors_over_seeds(pattern, 16)) {
    ASSERT_NE(e, "") << "the race passed";
    EXPECT_EQ(e.find("kernel race_pair, block (0,0,0): shared-memory race at byte 0: "), 0u) << e;
    EXPECT_NE(e.find(kThread0), std::string::npos) << e;
    EXPECT_NE(e.find(kThread40), std::string::npos) << e;
    EXPECT_NE(e.find(at_line(first_line)), std::string::npos) << e;
    EXPECT_NE(e.find(at_line(second_line)), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    for (const std::string& k : kinds)
      if (e.find(k) != std::string::npos) seen.insert(k);
  }
  for (const std::string& k : kinds) EXPECT_TRUE(seen.count(k)) << "no seed gave \"" << k << "\"";
}

TEST(SimtRaces, AReadAndAWriteOfTwoWarpsWithNoBarrierBetweenFailEitherWayRound) {
  using K = PairKernel;
  // Warp 0 first: thread 40 reads what thread 0 wrote; warp 1 first: thread 0 writes what 40 read.
  expect_races(Pattern::read_after_write, K::kWrite0, K::kRead40,
               {std::string(kThread40) + " reads at " + at_line(K::kRead40) + " what " + kThread0 + " wrote at " +
                    at_line(K::kWrite0) + ", with no barrier between",
                std::string(kThread0) + " writes at " + at_line(K::kWrite0) + " what " + kThread40 + " read at " +
                    at_line(K::kRead40) + ", with no barrier between"});
  expect_races(Pattern::write_after_write, K::kWrite0, K::kWrite40,
               {std::string(kThread40) + " writes at " + at_line(K::kWrite40) + " over what " + kThread0,
                std::string(kThread0) + " writes at " + at_line(K::kWrite0) + " over what " + kThread40});
}

TEST(SimtRaces, ABarrierBetweenOrdersThem) {
  for (const std::string& e : errors_over_seeds(Pattern::read_after_write_barrier, 8)) EXPECT_EQ(e, "");
  for (const std::string& e : errors_over_seeds(Pattern::prefetch_after_barrier, 8)) EXPECT_EQ(e, "");
}

TEST(SimtRaces, ACpAsyncDestinationIsOffLimitsUntilItsIssuerWaitedAndABarrierPassed) {
  using K = PairKernel;
  // The issuer itself, before its wait.
  for (const std::string& e : errors_over_seeds(Pattern::read_before_own_wait, 4))
    EXPECT_NE(e.find(std::string(kThread0) + " reads at " + at_line(K::kRead0) + " bytes the cp.async of " + kThread0 +
                     " at " + at_line(K::kCopy0) + " may still be copying (it has not waited for its group)"),
              std::string::npos) << e;
  // Another thread after a barrier (a barrier does not complete another thread's copies): the
  // copy in flight, or landed by the issuer's wait after the barrier but with none after that.
  expect_races(Pattern::read_in_flight_after_barrier, K::kCopy0, K::kRead40,
               {std::string(kThread40) + " reads at " + at_line(K::kRead40) + " bytes the cp.async of " + kThread0 +
                    " at " + at_line(K::kCopy0) + " may still be copying (that thread has not waited for its group)",
                std::string(kThread40) + " reads at " + at_line(K::kRead40) + " what " + kThread0 + " wrote at " +
                    at_line(K::kCopy0)});
  // A prefetch into the tile another warp is reading, either way round.
  expect_races(Pattern::prefetch_into_read_tile, K::kCopy0, K::kRead40First,
               {std::string(kThread0) + " writes at " + at_line(K::kCopy0) + " what " + kThread40 + " read at " +
                    at_line(K::kRead40First),
                std::string(kThread40) + " reads at " + at_line(K::kRead40First) + " what " + kThread0 + " wrote at " +
                    at_line(K::kCopy0)});
}

// A block reduction through shared memory that records the order its warps arrived in: the sum
// is the same for every seed, the order is not.
struct ArrivalKernel {
  static constexpr const char* kName = "arrival";
  struct Smem {
    simt::SharedArray<float, 8> per_warp;
  };
  Global<float> sum;          // (1)
  Global<unsigned> counter;   // (1)
  Global<unsigned> arrival;   // (8) warp w's place in the order
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    float v = 0.1f * static_cast<float>(t.thread_idx().x + 1);
    for (int offset = 16; offset > 0; offset /= 2) v += t.shfl_xor(simt::kFullMask, v, offset);
    if (t.lane() == 0) {
      s.per_warp(t.warp()) = v;
      arrival[t.warp()] = t.atomic_add(counter, 1u);
    }
    t.sync();
    if (t.thread_idx().x == 0) {
      float total = 0.f;
      for (int w = 0; w < 8; w++) total += s.per_warp(w);
      sum[0] = total;
    }
  }
};

TEST(SimtRaces, TheSeedChangesTheWarpOrderAndARaceFreeKernelsBitsNot) {
  std::set<std::vector<unsigned>> orders;
  std::set<float> sums;
  for (uint64_t seed = 0; seed < 8; seed++) {
    float sum = -1.f;
    unsigned counter = 0;
    std::vector<unsigned> arrival(8, 99);
    simt::Interpreter interp;
    interp.set_schedule_seed(seed);
    interp.launch(ArrivalKernel{&sum, &counter, arrival.data()},
                  {simt::Dim3(1), simt::Dim3(256), sizeof(ArrivalKernel::Smem)});
    orders.insert(arrival);
    sums.insert(sum);
  }
  EXPECT_GT(orders.size(), 4u) << "the seeds ran the warps in too few orders";
  EXPECT_EQ(sums.size(), 1u);
  EXPECT_FLOAT_EQ(*sums.begin(), 0.1f * 256 * 257 / 2);
}

}  // namespace

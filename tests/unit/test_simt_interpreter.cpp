// The kernel interpreter (kernels/simt): the fragment layouts entry by entry against the PTX
// ISA's formulas, warp shuffles and votes, a tiled GEMM through cp.async, ldmatrix and mma
// against plain loops, cp.async's groups, atomics and fences across concurrent blocks, the
// counters, and the one-line reports of what a GPU does silently (a barrier a thread skips, a
// lane missing from a warp operation, a shared-memory overrun, a cp.async read before its wait,
// a shape the target refuses). Races between threads: test_simt_races.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <random>
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

// ---- fragment layouts --------------------------------------------------------------------------

// The formulas as the PTX ISA states them for mma.m16n8k16 (floating point) and ldmatrix,
// written here from its text, independently of kernels/simt/fragments.hpp.
TEST(SimtFragments, MmaLayoutsAreThePtxIsaFormulas) {
  std::set<std::pair<int, int>> a_seen, b_seen, c_seen;
  for (int lane = 0; lane < 32; lane++) {
    const int group = lane >> 2, tid = lane % 4;
    for (int i = 0; i < 8; i++) {
      const bool upper = i == 2 || i == 3 || i == 6 || i == 7;
      const int row = upper ? group + 8 : group;
      const int col = i < 4 ? tid * 2 + (i & 1) : tid * 2 + (i & 1) + 8;
      const simt::MatrixCoord at = simt::mma_a_coord(lane, i);
      EXPECT_EQ(at.row, row) << "A lane " << lane << " a" << i;
      EXPECT_EQ(at.col, col) << "A lane " << lane << " a" << i;
      a_seen.insert({at.row, at.col});
    }
    for (int i = 0; i < 4; i++) {
      const int row = i < 2 ? tid * 2 + (i & 1) : tid * 2 + (i & 1) + 8;
      const simt::MatrixCoord at = simt::mma_b_coord(lane, i);
      EXPECT_EQ(at.row, row) << "B lane " << lane << " b" << i;
      EXPECT_EQ(at.col, group) << "B lane " << lane << " b" << i;
      b_seen.insert({at.row, at.col});
      const simt::MatrixCoord c = simt::mma_c_coord(lane, i);
      EXPECT_EQ(c.row, i < 2 ? group : group + 8) << "C lane " << lane << " c" << i;
      EXPECT_EQ(c.col, tid * 2 + (i & 1)) << "C lane " << lane << " c" << i;
      c_seen.insert({c.row, c.col});
    }
  }
  // Each element of A (16 x 16), B (16 x 8) and C (16 x 8) is held by exactly one (lane, register).
  EXPECT_EQ(a_seen.size(), 256u);
  EXPECT_EQ(b_seen.size(), 128u);
  EXPECT_EQ(c_seen.size(), 128u);
}

TEST(SimtFragments, LdmatrixLayoutIsThePtxIsaFormula) {
  std::set<std::pair<int, int>> seen, seen_trans;
  for (int lane = 0; lane < 32; lane++) {
    for (int h = 0; h < 2; h++) {
      const simt::MatrixCoord at = simt::ldmatrix_coord(lane, h, false);
      EXPECT_EQ(at.row, lane >> 2) << "lane " << lane << " half " << h;
      EXPECT_EQ(at.col, 2 * (lane % 4) + h) << "lane " << lane << " half " << h;
      const simt::MatrixCoord t = simt::ldmatrix_coord(lane, h, true);
      EXPECT_EQ(t.row, 2 * (lane % 4) + h) << "trans lane " << lane << " half " << h;
      EXPECT_EQ(t.col, lane >> 2) << "trans lane " << lane << " half " << h;
      seen.insert({at.row, at.col});
      seen_trans.insert({t.row, t.col});
    }
  }
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_EQ(seen_trans.size(), 64u);
  for (int j = 0; j < 4; j++)
    for (int r = 0; r < 8; r++) EXPECT_EQ(simt::ldmatrix_address_lane(j, r), 8 * j + r);
}

// ---- warp operations ---------------------------------------------------------------------------

struct WarpOpsKernel {
  static constexpr const char* kName = "warp_ops";
  Global<int> out;  // (threads, 7)
  SIMT_DEVICE void operator()(Thread& t) const {
    const int i = static_cast<int>(t.thread_idx().x);
    const int v = 1000 + i * 7;
    Global<int> o = out + static_cast<size_t>(i) * 7;
    o[0] = t.shfl_xor(simt::kFullMask, v, 5);
    o[1] = t.shfl_down(simt::kFullMask, v, 3);
    o[2] = t.shfl_up(simt::kFullMask, v, 2);
    o[3] = t.shfl_idx(simt::kFullMask, v, 9);
    o[4] = static_cast<int>(t.ballot(simt::kFullMask, i % 3 == 0));
    o[5] = t.any(simt::kFullMask, i == 40);
    o[6] = t.all(simt::kFullMask, i < 64);
    // Half-warp groups: lanes 0-15 and 16-31 shuffle among themselves.
    const unsigned half = t.lane() < 16 ? 0x0000ffffu : 0xffff0000u;
    const int partner = t.shfl_xor(half, v, 8);
    if (partner != 1000 + (i ^ 8) * 7) o[0] = -1;
  }
};

TEST(SimtInterpreter, ShufflesAndVotesFollowTheirDefinitions) {
  constexpr int kThreads = 64;
  std::vector<int> out(kThreads * 7, -7);
  simt::Interpreter interp;
  interp.launch(WarpOpsKernel{out.data()}, {simt::Dim3(1), simt::Dim3(kThreads), 0});
  const auto value = [](int i) { return 1000 + i * 7; };
  for (int i = 0; i < kThreads; i++) {
    const int lane = i % 32, base = i - lane;
    const int* o = &out[static_cast<size_t>(i) * 7];
    EXPECT_EQ(o[0], value(base + (lane ^ 5))) << "shfl_xor, thread " << i;
    EXPECT_EQ(o[1], value(lane + 3 < 32 ? i + 3 : i)) << "shfl_down, thread " << i;
    EXPECT_EQ(o[2], value(lane >= 2 ? i - 2 : i)) << "shfl_up, thread " << i;
    EXPECT_EQ(o[3], value(base + 9)) << "shfl_idx, thread " << i;
    unsigned ballot = 0;
    for (int l = 0; l < 32; l++)
      if ((base + l) % 3 == 0) ballot |= 1u << l;
    EXPECT_EQ(static_cast<unsigned>(o[4]), ballot) << "ballot, thread " << i;
    EXPECT_EQ(o[5], base == 32 ? 1 : 0) << "any, thread " << i;
    EXPECT_EQ(o[6], 1) << "all, thread " << i;
  }
}

// ---- a tiled GEMM through cp.async, ldmatrix and mma ----------------------------------------------

// C (M, N) = A (M, K) B (K, N), E = bf16 or fp16 in (row-major, as 16-bit patterns), fp32 out.
// One warp per 16 x 8 tile of C; K in steps of 16, the next step's tiles copied (cp.async,
// double-buffered, one commit group per step) while the current one is multiplied.
template <class E>
struct MmaGemmKernel {
  static constexpr const char* kName = simt::named<E>("", "mma_gemm_bf16", "mma_gemm_fp16");
  struct Smem {
    alignas(16) simt::SharedArray2D<uint16_t, 2 * 16, 16> a;  // two buffers of (16, 16)
    alignas(16) simt::SharedArray2D<uint16_t, 2 * 16, 8> b;   // two buffers of (16, 8)
  };
  Global<float> c;
  Global<const uint16_t> a, b;
  int M, N, K;

  // Thread `lane` copies 16 bytes of the (16, 16) A tile and, for lanes < 16, 16 bytes of B's.
  SIMT_DEVICE void copy_step(Thread& t, Smem& s, int buffer, int m0, int n0, int k0) const {
    const int lane = t.lane();
    const int ar = lane / 2, ac = (lane % 2) * 8;
    t.cp_async<16>(&s.a(buffer * 16 + ar, ac), a.get() + static_cast<size_t>(m0 + ar) * K + k0 + ac);
    if (lane < 16) t.cp_async<16>(&s.b(buffer * 16 + lane, 0), b.get() + static_cast<size_t>(k0 + lane) * N + n0);
    t.cp_async_commit();
  }

  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const int lane = t.lane();
    const int m0 = static_cast<int>(t.block_idx().y) * 16, n0 = static_cast<int>(t.block_idx().x) * 8;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    copy_step(t, s, 0, m0, n0, 0);
    for (int k0 = 0, step = 0; k0 < K; k0 += 16, step++) {
      const int buffer = step % 2;
      if (k0 + 16 < K) {
        copy_step(t, s, 1 - buffer, m0, n0, k0 + 16);
        t.cp_async_wait<1>();  // this step's group has landed; the next one may still be in flight
      } else {
        t.cp_async_wait<0>();
      }
      t.sync();
      const int j = lane / 8, r = lane % 8;  // this lane gives row r of matrix j
      uint32_t af[4], bf[2];
      t.ldmatrix<4>(af, &s.a(buffer * 16 + (j % 2) * 8 + r, (j / 2) * 8));
      t.ldmatrix<2, true>(bf, &s.b(buffer * 16 + (j % 2) * 8 + r, 0));
      t.mma_16816<E>(acc, af, bf, acc);
      t.sync();  // the buffer is refilled in the next step
    }
    for (int i = 0; i < 4; i++) {
      const simt::MatrixCoord at = simt::mma_c_coord(lane, i);
      c[static_cast<size_t>(m0 + at.row) * N + n0 + at.col] = acc[i];
    }
  }
};

template <class E>
void check_mma_gemm() {
  constexpr int M = 32, N = 16, K = 48;
  SCOPED_TRACE(MmaGemmKernel<E>::kName);
  // Small integers: exact in bf16 and fp16, and every product and partial sum exact in fp32, so
  // the interpreted GEMM must equal the integer loops bit for bit, whatever its summation order.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(-8, 8);
  std::vector<int> ai(M * K), bi(K * N);
  std::vector<uint16_t> a(M * K), b(K * N);
  for (size_t i = 0; i < a.size(); i++) a[i] = simt::from_float<E>(static_cast<float>(ai[i] = pick(rng))).bits;
  for (size_t i = 0; i < b.size(); i++) b[i] = simt::from_float<E>(static_cast<float>(bi[i] = pick(rng))).bits;
  std::vector<float> c(M * N, std::nanf(""));
  simt::Interpreter interp;
  interp.launch(MmaGemmKernel<E>{c.data(), a.data(), b.data(), M, N, K},
                {simt::Dim3(N / 8, M / 16), simt::Dim3(32), sizeof(typename MmaGemmKernel<E>::Smem)});
  int wrong = 0;
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      long want = 0;
      for (int k = 0; k < K; k++) want += long{ai[m * K + k]} * bi[k * N + n];
      if (c[m * N + n] != static_cast<float>(want) && wrong++ < 5)
        ADD_FAILURE() << "C[" << m << "][" << n << "] = " << c[m * N + n] << ", expected " << want;
    }
  EXPECT_EQ(wrong, 0);
  const simt::KernelCounts& counts = interp.counts().at(MmaGemmKernel<E>::kName);
  EXPECT_EQ(counts.launches, 1u);
  EXPECT_EQ(counts.mma_flops, 2ull * M * N * K);
  // Each (16, 16) A tile is read by the N / 8 warps of its row of tiles, each (16, 8) B tile by
  // the M / 16 warps of its column: counted as requested, not as DRAM traffic.
  EXPECT_EQ(counts.bytes_read, 2ull * (M * K * (N / 8) + K * N * (M / 16)));
  EXPECT_EQ(counts.bytes_written, 4ull * M * N);
}

TEST(SimtInterpreter, TiledGemmThroughMmaAndLdmatrixEqualsPlainLoops) {
  check_mma_gemm<eth::kernels::bf16>();
  check_mma_gemm<eth::kernels::fp16>();
}

// ---- cp.async groups ------------------------------------------------------------------------------

struct AsyncGroupsKernel {
  static constexpr const char* kName = "async_groups";
  struct Smem {
    alignas(16) simt::SharedArray<float, 12> x;
  };
  Global<const float> src;  // (12)
  Global<float> seen;       // (3, 12): the groups landed after wait_group 2, 1, 0 (the rest untouched)
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    for (int g = 0; g < 3; g++) {
      t.cp_async<16>(&s.x(4 * g), src.get() + 4 * g);
      t.cp_async_commit();
    }
    t.cp_async_wait<2>();
    for (int i = 0; i < 4; i++) seen[i] = s.x(i);
    t.cp_async_wait<1>();
    for (int i = 0; i < 8; i++) seen[12 + i] = s.x(i);
    t.cp_async_wait<0>();
    for (int i = 0; i < 12; i++) seen[24 + i] = s.x(i);
  }
};

// Reads one element of group `early_read`'s copy before the wait that lands it.
struct EarlyReadKernel {
  static constexpr const char* kName = "async_early_read";
  struct Smem {
    alignas(16) simt::SharedArray<float, 8> x;
  };
  Global<const float> src;  // (8)
  Global<float> seen;       // (1)
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    for (int g = 0; g < 2; g++) {
      t.cp_async<16>(&s.x(4 * g), src.get() + 4 * g);
      t.cp_async_commit();
    }
    t.cp_async_wait<1>();
    seen[0] = s.x(5);  // the bug: group 1 is still in flight
  }
};

TEST(SimtInterpreter, CpAsyncLandsWhenItsGroupIsWaitedFor) {
  alignas(16) float src[12];
  for (int i = 0; i < 12; i++) src[i] = 1.5f + i;
  std::vector<float> seen(36, -1.f);
  simt::Interpreter interp;
  interp.launch(AsyncGroupsKernel{src, seen.data()}, {simt::Dim3(1), simt::Dim3(1), sizeof(AsyncGroupsKernel::Smem)});
  for (int stage = 0; stage < 3; stage++)
    for (int i = 0; i < 4 * (stage + 1); i++)
      EXPECT_EQ(seen[static_cast<size_t>(stage) * 12 + i], src[i])
          << "after wait_group " << 2 - stage << ", element " << i;
  // Reading a copy not yet waited for fails the launch (on the GPU it reads whatever is there).
  const std::string e = launch_error([&] {
    interp.launch(EarlyReadKernel{src, seen.data()}, {simt::Dim3(1), simt::Dim3(1), sizeof(EarlyReadKernel::Smem)});
  });
  EXPECT_NE(e.find("kernel async_early_read, block (0,0,0): shared-memory race at byte 20: thread 0 (warp 0, lane 0) "
                   "reads at test_simt_interpreter.cpp:"),
            std::string::npos) << e;
  EXPECT_NE(e.find("may still be copying (it has not waited for its group)"), std::string::npos) << e;
}

// ---- atomics and fences across blocks -------------------------------------------------------------

// Every thread adds 1 to one counter and keeps the value it saw; then block b writes b + 1 to
// partials[b], fences and counts itself in; the block that counts last adds the partials in
// block order and resets its counter (the last-block pattern of the fused kernels).
struct AtomicsKernel {
  static constexpr const char* kName = "atomics";
  Global<unsigned> counters;  // (2): every thread's adds, the blocks finished
  Global<unsigned> seen;      // (blocks * threads) the value each thread's add saw
  Global<unsigned> partials;  // (blocks)
  Global<unsigned> total;     // (1) written by the last block only
  struct Smem {
    simt::SharedArray<unsigned, 1> last;
  };
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const unsigned b = t.block_idx().x, i = b * t.block_dim().x + t.thread_idx().x;
    seen[i] = t.atomic_add(counters, 1u);
    if (t.thread_idx().x == 0) {
      partials[b] = b + 1;
      t.threadfence();
      s.last(0) = t.atomic_add(counters + 1, 1u) == t.grid_dim().x - 1;
    }
    t.sync();
    if (!s.last(0) || t.thread_idx().x != 0) return;
    t.threadfence();
    unsigned sum = 0;
    for (unsigned k = 0; k < t.grid_dim().x; k++) sum += partials[k];
    total[0] = sum;
    counters[1] = 0u;
  }
};

TEST(SimtInterpreter, AtomicAddIsAtomicAcrossConcurrentBlocksAndTheLastBlockSeesEveryPartial) {
  const int saved_threads = omp_get_max_threads();
  omp_set_num_threads(4);  // blocks truly concurrent, whatever OMP_NUM_THREADS says
  constexpr unsigned kBlocks = 97, kThreads = 64, kAll = kBlocks * kThreads;
  for (int run = 0; run < 3; run++) {
    std::vector<unsigned> counters{7u, 0u}, seen(kAll, 0xffffffffu), partials(kBlocks, 0u), total{0u};
    simt::Interpreter interp;
    interp.launch(AtomicsKernel{counters.data(), seen.data(), partials.data(), total.data()},
                  {simt::Dim3(kBlocks), simt::Dim3(kThreads), sizeof(AtomicsKernel::Smem)});
    // Each add saw a distinct value: exactly 7, 8, ..., 7 + kAll - 1 in some order.
    std::sort(seen.begin(), seen.end());
    for (unsigned k = 0; k < kAll; k++) ASSERT_EQ(seen[k], 7u + k) << "run " << run << ", the " << k << "-th add";
    EXPECT_EQ(counters[0], 7u + kAll);
    EXPECT_EQ(counters[1], 0u) << "the last block resets its counter";
    EXPECT_EQ(total[0], kBlocks * (kBlocks + 1) / 2) << "the last block missed a partial";
    // Traffic: each atomic reads and writes 4 bytes, as do the plain accesses around them.
    const simt::KernelCounts& c = interp.counts().at("atomics");
    EXPECT_EQ(c.bytes_read, 4u * (kAll + kBlocks) + 4u * kBlocks);
    EXPECT_EQ(c.bytes_written, 4u * (2 * kAll) + 4u * (2 * kBlocks) + 4u * 2);
  }
  omp_set_num_threads(saved_threads);
}

// ---- what a GPU does silently, reported --------------------------------------------------------------

struct SkippedBarrierKernel {
  static constexpr const char* kName = "skipped_barrier";
  Global<float> out;
  SIMT_DEVICE void operator()(Thread& t) const {
    const int i = static_cast<int>(t.thread_idx().x);
    if (i >= 40) return;  // the bug: these threads never reach the barrier
    out[i] = 1.f;
    t.sync();
  }
};

TEST(SimtInterpreter, ABarrierAThreadSkipsIsReportedInOneLine) {
  std::vector<float> out(64);
  simt::Interpreter interp;
  const std::string e = launch_error([&] { interp.launch(SkippedBarrierKernel{out.data()}, {simt::Dim3(2), simt::Dim3(64), 0}); });
  EXPECT_NE(e.find("kernel skipped_barrier, block ("), std::string::npos) << e;
  EXPECT_NE(e.find("barrier at test_simt_interpreter.cpp:"), std::string::npos) << e;
  EXPECT_NE(e.find("reached by threads 0-39 and never by threads 40-63"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

struct MissingLaneKernel {
  static constexpr const char* kName = "missing_lane";
  Global<int> out;
  bool own_lane_left_out;
  SIMT_DEVICE void operator()(Thread& t) const {
    const int lane = t.lane();
    if (own_lane_left_out) {
      out[lane] = t.shfl_xor(0x0000fffeu | (lane < 16 ? 0u : 0xffff0000u), lane, 1);  // lane 0 calls without its bit
    } else {
      if (lane == 31) return;  // the bug: lane 31 leaves before the warp's reduction
      out[lane] = t.shfl_xor(simt::kFullMask, lane, 1);
    }
  }
};

TEST(SimtInterpreter, AWarpOperationWithALaneMissingIsReportedInOneLine) {
  std::vector<int> out(32);
  simt::Interpreter interp;
  std::string e = launch_error([&] { interp.launch(MissingLaneKernel{out.data(), true}, {simt::Dim3(1), simt::Dim3(32), 0}); });
  EXPECT_NE(e.find("shfl_xor at test_simt_interpreter.cpp:"), std::string::npos) << e;
  EXPECT_NE(e.find("thread 0 (warp 0, lane 0) calls it with mask 0x0000fffe, which leaves out its own lane"),
            std::string::npos) << e;
  e = launch_error([&] { interp.launch(MissingLaneKernel{out.data(), false}, {simt::Dim3(1), simt::Dim3(32), 0}); });
  EXPECT_NE(e.find("with mask 0xffffffff: thread 31 (warp 0, lane 31) never joins (it returned)"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

struct DivergentBarriersKernel {
  static constexpr const char* kName = "divergent_barriers";
  SIMT_DEVICE void operator()(Thread& t) const {
    if (t.warp() == 0) t.sync();  // the bug: the two warps meet at different barriers
    else t.sync();
  }
};
struct DeadlockKernelWithLaneAtBarrier {
  static constexpr const char* kName = "deadlock_lane_at_barrier";
  SIMT_DEVICE void operator()(Thread& t) const {
    if (t.lane() == 3) t.sync();  // the bug: lane 3 waits at the barrier while its warp shuffles
    else (void)t.shfl_xor(simt::kFullMask, 1, 1);
  }
};

TEST(SimtInterpreter, ADeadlockEndsTheLaunchWithAReportNeverAHang) {
  simt::Interpreter interp;
  const std::string e =
      launch_error([&] { interp.launch(DeadlockKernelWithLaneAtBarrier{}, {simt::Dim3(1), simt::Dim3(32), 0}); });
  EXPECT_NE(e.find("thread 3 (warp 0, lane 3) never joins (it waits at the barrier at test_simt_interpreter.cpp:"),
            std::string::npos) << e;
  const std::string d =
      launch_error([&] { interp.launch(DivergentBarriersKernel{}, {simt::Dim3(1), simt::Dim3(64), 0}); });
  EXPECT_NE(d.find("threads wait at different barriers: thread 0 at test_simt_interpreter.cpp:"), std::string::npos) << d;
}

struct OverrunKernel {
  static constexpr const char* kName = "shared_overrun";
  struct Smem {
    simt::SharedArray2D<float, 8, 16> tile;
  };
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const int i = static_cast<int>(t.thread_idx().x);
    s.tile(i / 16, i % 16 + (i == 77 ? 16 : 0)) = 1.f;  // the bug: thread 77 writes one row on
  }
};

TEST(SimtInterpreter, ASharedMemoryOverrunIsReportedInOneLine) {
  simt::Interpreter interp;
  const std::string e =
      launch_error([&] { interp.launch(OverrunKernel{}, {simt::Dim3(1), simt::Dim3(128), sizeof(OverrunKernel::Smem)}); });
  EXPECT_NE(e.find("kernel shared_overrun, block (0,0,0): shared-memory index 29 is out of range [0, 16) at "
                   "test_simt_interpreter.cpp:"),
            std::string::npos) << e;
}

struct NothingKernel {
  static constexpr const char* kName = "nothing";
  struct Smem {
    simt::SharedArray<float, 64> x;
  };
  Global<float> out;
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    out[t.thread_idx().x] = s.x(t.thread_idx().x);
  }
};

TEST(SimtInterpreter, SharedMemoryStartsAsNaNAndShapesPastTheTargetAreRefused) {
  std::vector<float> out(64, 0.f);
  simt::Interpreter interp;
  interp.launch(NothingKernel{out.data()}, {simt::Dim3(1), simt::Dim3(64), sizeof(NothingKernel::Smem)});
  for (float v : out) EXPECT_TRUE(std::isnan(v)) << v;
  EXPECT_EQ(interp.counts().at("nothing").bytes_written, 64u * 4);
  EXPECT_EQ(interp.counts().at("nothing").bytes_read, 0u);
  std::string e = launch_error([&] { interp.launch(NothingKernel{out.data()}, {simt::Dim3(1), simt::Dim3(64), 16}); });
  EXPECT_NE(e.find("the kernel's layout takes 256 bytes, the launch gives 16"), std::string::npos) << e;
  e = launch_error([&] { interp.launch(NothingKernel{out.data()}, {simt::Dim3(1), simt::Dim3(64), 200 * 1024}); });
  EXPECT_NE(e.find("204800 bytes of shared memory per block, past the 166912 of sm_80"), std::string::npos) << e;
  e = launch_error([&] { interp.launch(NothingKernel{out.data()}, {simt::Dim3(1), simt::Dim3(2048), 256}); });
  EXPECT_NE(e.find("block (2048,1,1) is not 1 to 1024 threads"), std::string::npos) << e;
}

}  // namespace

// The interpreter's counters per launch (kernels/simt/profile.hpp): a small known kernel against
// its hand count, and planted performance bugs, each flagged by the counter it should move
// against the same kernel without the bug: a strided global load (sectors per request), a shared
// tile without its padding (wavefronts above the ideal; ldmatrix and 16-byte stores too), an FP64
// accumulation (fp64), a serial last block (the tail), an extra pass over an input (requested
// bytes against distinct bytes). Global buffers are 128-byte aligned, so that sectors and lines
// are the ones a GPU allocation (256-byte aligned) gives.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>

#include "kernels/bf16.hpp"
#include "kernels/gpu_ops/classifier16.hpp"
#include "kernels/gpu_ops/crossentropy.hpp"
#include "kernels/gpu_ops/layernorm.hpp"
#include "kernels/simt/interpreter.hpp"
#include "kernels/simt/simt.hpp"

namespace simt = eth::kernels::simt;
using eth::kernels::bf16;

namespace profile_test {

using simt::Global;
using simt::Thread;

int global_index(Thread& t) { return static_cast<int>(t.block_idx().x * t.block_dim().x + t.thread_idx().x); }

// c[i] = a[i] + b[i] for i < n, one element a thread.
struct VectorAdd {
  static constexpr const char* kName = "vector_add";
  Global<const float> a, b;
  Global<float> c;
  int n;
  SIMT_DEVICE void operator()(Thread& t) const {
    const int i = global_index(t);
    if (i < n) c[i] = a[i] + b[i];
  }
};

// y[i] = x[i * stride]: with a stride of 32 floats each lane of a warp reads its own 128-byte line.
struct StridedCopy {
  static constexpr const char* kName = "strided_copy";
  Global<const float> x;
  Global<float> y;
  int stride;
  static constexpr int kLoadLine = __LINE__ + 3;
  SIMT_DEVICE void operator()(Thread& t) const {
    const int i = global_index(t);
    const float v = x[static_cast<size_t>(i) * stride];
    y[i] = v;
  }
};

// One warp writes a 32 x 32 tile row by row and reads it back column by column (a transpose):
// without padding a column's 32 floats lie in one bank.
template <int Pad>
struct TransposeTile {
  static constexpr const char* kName = "transpose_tile";
  struct Smem {
    simt::SharedArray2D<float, 32, 32 + Pad> tile;
  };
  Global<const float> in;
  Global<float> out;
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const int lane = t.lane();
    for (int r = 0; r < 32; r++) s.tile(r, lane) = in[r * 32 + lane];
    t.sync();
    for (int c = 0; c < 32; c++) out[c * 32 + lane] = s.tile(lane, c);
  }
};

// One warp reads shared memory after filling it: every lane the same word (a broadcast), lane l
// the float at 2 l (two lanes a bank), lane l pair l (8 bytes, in half-warps), lane l pair
// 2 (l % 16) (each half-warp the same pairs, two of its lanes a bank).
enum class SharedPattern { broadcast, stride_two, pairs, pairs_two_apart };
struct SharedReads {
  static constexpr const char* kName = "shared_reads";
  struct Smem {
    simt::SharedArray<float, 64> a;
    simt::SharedArray<simt::Float2, 32> pairs;
  };
  Global<float> out;
  SharedPattern pattern;
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const int lane = t.lane();
    s.a(lane) = 1.f;
    s.a(lane + 32) = 2.f;
    s.pairs(lane) = simt::Float2{1.f, 2.f};
    t.sync();
    float v = 0.f;
    if (pattern == SharedPattern::broadcast) v = s.a(0);
    if (pattern == SharedPattern::stride_two) v = s.a(2 * lane);
    if (pattern == SharedPattern::pairs) v = static_cast<simt::Float2>(s.pairs(lane)).y;
    if (pattern == SharedPattern::pairs_two_apart) v = static_cast<simt::Float2>(s.pairs(2 * (lane % 16))).y;
    out[lane] = v;
  }
};

// One warp stores rows of 8 bf16 (16 bytes a lane) into a 32 x Cols tile, then loads its four
// 8 x 8 matrices of columns 0-7 with ldmatrix.x4: with Cols = 64 every row starts in bank 0.
template <int Cols>
struct LoadMatrices {
  static constexpr const char* kName = "load_matrices";
  struct Smem {
    alignas(16) simt::SharedArray2D<bf16, 32, Cols> tile;
  };
  Global<unsigned> out;
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const int lane = t.lane();
    simt::Packed<bf16, 8> row{};
    for (int k = 0; k < 8; k++) row.h[k] = simt::to_bf16(static_cast<float>(lane * 8 + k));
    s.tile.template piece<8>(lane, 0) = row;
    t.sync();
    uint32_t r[4];
    t.ldmatrix<4>(r, &s.tile(lane, 0));
    out[lane] = r[0] ^ r[1] ^ r[2] ^ r[3];
  }
};

// y[i] = the sum of x[8 i .. 8 i + 8), accumulated in Acc (float, or simt::f64: the planted bug).
template <class Acc>
struct RowSums {
  static constexpr const char* kName = "row_sums";
  Global<const float> x;
  Global<float> y;
  SIMT_DEVICE void operator()(Thread& t) const {
    const int i = global_index(t);
    Acc acc = 0.0f;
    for (int k = 0; k < 8; k++) acc += Acc(x[8 * i + k]);
    y[i] = static_cast<float>(acc);
  }
};

// y[i] = x[i] in every block; with `serial` (the planted bug) the last block's thread 0 instead
// adds up all n inputs alone while its other threads idle.
struct LastBlock {
  static constexpr const char* kName = "last_block";
  Global<const float> x;
  Global<float> y;
  int n;
  bool serial;
  SIMT_DEVICE void operator()(Thread& t) const {
    const int i = global_index(t);
    if (!serial || t.block_idx().x + 1 < t.grid_dim().x) {
      y[i] = x[i];
    } else if (t.thread_idx().x == 0) {
      float sum = 0.f;
      for (int k = 0; k < n; k++) sum += x[k];
      y[i] = sum;
    }
  }
};

// y[i] = 2 x[i], from the value loaded once, or (`reread`, the planted bug) from a second load.
struct Doubled {
  static constexpr const char* kName = "doubled";
  Global<const float> x;
  Global<float> y;
  bool reread;
  SIMT_DEVICE void operator()(Thread& t) const {
    const size_t i = static_cast<size_t>(global_index(t));
    const float v = x[i];
    y[i] = reread ? v + x[i] : v + v;
  }
};

// Lane l of one warp reads x[32 k + l] for k = 0..l: a loop whose trip count differs by lane.
struct Triangle {
  static constexpr const char* kName = "triangle";
  Global<const float> x;
  Global<float> y;
  SIMT_DEVICE void operator()(Thread& t) const {
    const int lane = t.lane();
    float sum = 0.f;
    for (int k = 0; k <= lane; k++) sum += x[32 * k + lane];
    y[lane] = sum;
  }
};

// Every lane of one warp reads x[0], then x[lane / 2]: lanes sharing bytes.
struct SharedBytes {
  static constexpr const char* kName = "shared_bytes";
  Global<const float> x;
  Global<float> y;
  SIMT_DEVICE void operator()(Thread& t) const {
    const int lane = t.lane();
    y[lane] = x[0] + x[lane / 2];
  }
};

// Each warp issues one mma; each thread two special functions between two barriers, then one
// atomic add on one of four counters.
struct Instructions {
  static constexpr const char* kName = "instructions";
  Global<unsigned> counters;
  Global<float> out;
  SIMT_DEVICE void operator()(Thread& t) const {
    const uint32_t a[4] = {0x3f803f80u, 0, 0, 0}, b[2] = {0x3f803f80u, 0};
    const float c[4] = {0.f, 0.f, 0.f, 0.f};
    float d[4];
    t.mma_16816<bf16>(d, a, b, c);
    t.sync();
    out[global_index(t)] = simt::expf_(d[0]) + simt::logf_(2.f);
    t.sync();
    t.atomic_add(counters + t.thread_idx().x % 4, 1u);
  }
};

// A kernel that names the blocks per SM it needs: ncu sees it as simt_entry_bounded.
struct Bounded {
  static constexpr const char* kName = "bounded";
  static constexpr int kThreadsPerBlock = 32, kMinBlocksPerSm = 2;
  Global<float> out;
  SIMT_DEVICE void operator()(Thread& t) const { out[t.lane()] = 1.f; }
};

}  // namespace profile_test

namespace {

using namespace profile_test;

// n elements of T at a 128-byte boundary, zeroed.
template <class T>
class Aligned {
 public:
  explicit Aligned(size_t n) : p_(static_cast<T*>(std::aligned_alloc(128, (n * sizeof(T) + 127) / 128 * 128))) {
    std::memset(static_cast<void*>(p_), 0, n * sizeof(T));
  }
  ~Aligned() { std::free(p_); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  T* get() const { return p_; }

 private:
  T* p_;
};

// A direction's counts as (requests, sectors, lines, bytes, ideal sectors), compared at once.
using Traffic = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, uint64_t>;
Traffic traffic(const simt::GlobalTraffic& t) { return {t.requests, t.sectors, t.lines, t.bytes, t.ideal_sectors}; }

simt::LaunchShape shape(unsigned grid, unsigned block, size_t shared = 0) {
  return {simt::Dim3(grid), simt::Dim3(block), shared};
}

// The one profile of a launch with counters on.
template <class Kernel>
simt::LaunchProfile profile(const Kernel& k, const simt::LaunchShape& s, uint64_t seed = 0x5eed) {
  simt::Interpreter interp;
  interp.set_schedule_seed(seed);
  interp.set_counters(true);
  interp.launch(k, s);
  EXPECT_EQ(interp.profiles().size(), 1u);
  return interp.profiles().at(0);
}

// n = 1000 floats, grid 8 of 128 threads (1024 threads, 32 warps). Warps 0-30 have all 32 lanes
// active: per array one request of 32 x 4 = 128 contiguous bytes at a 128-byte boundary, 4
// sectors, 1 line. Warp 31 (threads 992-1023) has lanes 0-7 active (elements 992-999): 32 bytes
// at byte 3968 = 31 x 128, 1 sector, 1 line. So loads: 2 x 32 = 64 requests, 2 x (31 x 4 + 1) =
// 250 sectors, 64 lines, 2 x 4000 bytes, all distinct; stores: 32 requests, 125 sectors, 32 lines,
// 4000 bytes. Work per block, one per element access: blocks 0-6 3 x 128 = 384, block 7 (elements
// 896-999) 3 x 104 = 312. No shared memory, no barriers, no instructions counted.
TEST(SimtProfile, VectorAddMatchesTheHandCount) {
  const int n = 1000;
  Aligned<float> a(n), b(n), c(n);
  const simt::LaunchProfile p = profile(VectorAdd{a.get(), b.get(), c.get(), n}, shape(8, 128));
  EXPECT_EQ(p.name, "void eth::kernels::cuda::simt_entry<profile_test::VectorAdd>(T1)");
  EXPECT_EQ(p.dialect_name, "vector_add");
  EXPECT_EQ(p.grid.x, 8u);
  EXPECT_EQ(p.block.x, 128u);
  EXPECT_EQ(traffic(p.loads), Traffic(64, 250, 64, 8000, 250));
  EXPECT_EQ(traffic(p.stores), Traffic(32, 125, 32, 4000, 125));
  EXPECT_EQ(p.distinct_bytes_read, 8000u);
  EXPECT_EQ(p.distinct_bytes_written, 4000u);
  EXPECT_EQ(p.distinct_sectors_read, 250u);
  EXPECT_EQ(p.distinct_sectors_written, 125u);
  EXPECT_EQ(p.block_work, (std::vector<uint64_t>{384, 384, 384, 384, 384, 384, 384, 312}));
  EXPECT_EQ(p.shared_loads.instructions + p.shared_stores.instructions + p.ldmatrix.instructions, 0u);
  EXPECT_EQ(p.mma + p.special + p.fp64 + p.atomics + p.barriers, 0u);
  ASSERT_EQ(p.sites.size(), 3u);  // a[i], b[i], c[i]: three sites on one line
  for (const simt::GlobalSite& s : p.sites) {
    EXPECT_EQ(s.traffic.requests, 32u);
    EXPECT_EQ(s.traffic.sectors, 125u);
  }
}

// The lanes run as fibers in an order the seed draws; the grouping into requests does not depend on it.
TEST(SimtProfile, CountsDoNotDependOnTheScheduleSeed) {
  const int n = 1000;
  Aligned<float> a(n), b(n), c(n);
  const VectorAdd k{a.get(), b.get(), c.get(), n};
  const simt::LaunchProfile p1 = profile(k, shape(8, 128), 1), p2 = profile(k, shape(8, 128), 0xabcdef);
  EXPECT_EQ(p1.loads.sectors, p2.loads.sectors);
  EXPECT_EQ(p1.loads.requests, p2.loads.requests);
  EXPECT_EQ(p1.stores.sectors, p2.stores.sectors);
  EXPECT_EQ(p1.block_work, p2.block_work);
}

TEST(SimtProfile, CountersAreOffByDefault) {
  Aligned<float> a(32), b(32), c(32);
  simt::Interpreter interp;
  interp.launch(VectorAdd{a.get(), b.get(), c.get(), 32}, shape(1, 32));
  EXPECT_TRUE(interp.profiles().empty());
  EXPECT_EQ(interp.counts().at("vector_add").bytes_read, 256u);
}

// Planted: lanes 128 bytes apart. 4 warps: contiguous, a load request touches 4 sectors and 1
// line; strided, 32 sectors and 32 lines where its 128 bytes would fit in 4 sectors, and the
// worst site is the load's line.
TEST(SimtProfile, StridedLoadRaisesSectorsPerRequest) {
  const int threads = 128;
  Aligned<float> x(threads * 32), y(threads);
  const simt::LaunchProfile contiguous = profile(StridedCopy{x.get(), y.get(), 1}, shape(2, 64));
  const simt::LaunchProfile strided = profile(StridedCopy{x.get(), y.get(), 32}, shape(2, 64));
  EXPECT_EQ(contiguous.loads.requests, 4u);
  EXPECT_EQ(contiguous.loads.sectors_per_request(), 4.0);
  EXPECT_EQ(contiguous.loads.lines, 4u);
  EXPECT_EQ(strided.loads.requests, 4u);
  EXPECT_EQ(strided.loads.sectors_per_request(), 32.0);
  EXPECT_EQ(strided.loads.lines, 128u);
  EXPECT_EQ(strided.loads.ideal_sectors, 16u);
  EXPECT_EQ(contiguous.loads.ideal_sectors, 16u);
  EXPECT_EQ(strided.stores.sectors_per_request(), 4.0);
  const simt::GlobalSite* worst = strided.worst_site();
  ASSERT_NE(worst, nullptr);
  EXPECT_FALSE(worst->store);
  EXPECT_EQ(worst->where.rfind("test_simt_profile.cpp:" + std::to_string(StridedCopy::kLoadLine) + ":", 0), 0u)
      << worst->where;
  EXPECT_EQ(worst->traffic.sectors_per_request(), 32.0);
}

// Planted: the tile without its padding column. The row writes hit 32 banks either way (32
// instructions, 32 wavefronts); the column reads of the unpadded tile put all 32 lanes' words in
// one bank: 32 wavefronts each, 1024 against the ideal 32; padded to 33 columns, 32.
TEST(SimtProfile, UnpaddedTileRaisesSharedWavefronts) {
  Aligned<float> in(1024), out(1024);
  const simt::LaunchProfile bare =
      profile(TransposeTile<0>{in.get(), out.get()}, shape(1, 32, sizeof(TransposeTile<0>::Smem)));
  const simt::LaunchProfile padded =
      profile(TransposeTile<1>{in.get(), out.get()}, shape(1, 32, sizeof(TransposeTile<1>::Smem)));
  for (const simt::LaunchProfile* p : {&bare, &padded}) {
    EXPECT_EQ(p->shared_stores.instructions, 32u);
    EXPECT_EQ(p->shared_stores.wavefronts, 32u);
    EXPECT_EQ(p->shared_stores.ideal, 32u);
    EXPECT_EQ(p->shared_loads.instructions, 32u);
    EXPECT_EQ(p->shared_loads.ideal, 32u);
    EXPECT_EQ(p->barriers, 1u);
  }
  EXPECT_EQ(bare.shared_loads.wavefronts, 1024u);
  EXPECT_EQ(padded.shared_loads.wavefronts, 32u);
}

// The stores: two of 32 floats, one of 32 pairs (2 half-warps of 16 x 8 bytes): 4 instructions,
// 4 wavefronts, the ideal. The read: a broadcast of one word takes 1 wavefront (ideal 1); floats
// two words apart put two lanes' distinct words in each of 16 banks: 2 (ideal 1); 8-byte pairs,
// contiguous: 2 half-warps of 1 (ideal 2); pairs 4 words apart: in each half-warp pairs k and
// k + 8 share a bank, 2 half-warps of 2 (ideal 2; taken as one phase, the halves' same words
// would be broadcasts and give 2).
TEST(SimtProfile, SharedReadsCountBroadcastsConflictsAndHalfWarps) {
  Aligned<float> out(32);
  const auto read = [&](SharedPattern pattern) {
    const simt::LaunchProfile p = profile(SharedReads{out.get(), pattern}, shape(1, 32, sizeof(SharedReads::Smem)));
    EXPECT_EQ(p.shared_stores.instructions, 3u);
    EXPECT_EQ(p.shared_stores.wavefronts, 4u);
    EXPECT_EQ(p.shared_stores.ideal, 4u);
    EXPECT_EQ(p.shared_loads.instructions, 1u);
    return p.shared_loads;
  };
  const simt::SharedTraffic broadcast = read(SharedPattern::broadcast), stride_two = read(SharedPattern::stride_two),
                            pairs = read(SharedPattern::pairs),
                            pairs_two_apart = read(SharedPattern::pairs_two_apart);
  EXPECT_EQ(broadcast.wavefronts, 1u);
  EXPECT_EQ(broadcast.ideal, 1u);
  EXPECT_EQ(stride_two.wavefronts, 2u);
  EXPECT_EQ(stride_two.ideal, 1u);
  EXPECT_EQ(pairs.wavefronts, 2u);
  EXPECT_EQ(pairs.ideal, 2u);
  EXPECT_EQ(pairs_two_apart.wavefronts, 4u);
  EXPECT_EQ(pairs_two_apart.ideal, 2u);
}

// Planted: bf16 rows of 128 bytes (64 columns), so that every row starts in bank 0. The 16-byte
// stores go in quarter-warp phases of 8 rows: 8 wavefronts a phase unpadded (32 in all), 1 a
// phase with rows of 144 bytes (4 in all; the ideal). ldmatrix.x4: one phase per 8 x 8 matrix, 8
// wavefronts each unpadded (32), 1 each padded (4; the ideal).
TEST(SimtProfile, UnpaddedTileRaisesLdmatrixAndWideStoreWavefronts) {
  Aligned<unsigned> out(32);
  const simt::LaunchProfile bare = profile(LoadMatrices<64>{out.get()}, shape(1, 32, sizeof(LoadMatrices<64>::Smem)));
  const simt::LaunchProfile padded =
      profile(LoadMatrices<72>{out.get()}, shape(1, 32, sizeof(LoadMatrices<72>::Smem)));
  for (const simt::LaunchProfile* p : {&bare, &padded}) {
    EXPECT_EQ(p->shared_stores.instructions, 1u);
    EXPECT_EQ(p->shared_stores.ideal, 4u);
    EXPECT_EQ(p->ldmatrix.instructions, 1u);
    EXPECT_EQ(p->ldmatrix.ideal, 4u);
  }
  EXPECT_EQ(bare.shared_stores.wavefronts, 32u);
  EXPECT_EQ(bare.ldmatrix.wavefronts, 32u);
  EXPECT_EQ(padded.shared_stores.wavefronts, 4u);
  EXPECT_EQ(padded.ldmatrix.wavefronts, 4u);
}

// Planted: the accumulator in double. 32 threads, 8 additions each: 256 FP64 operations; in float, none.
TEST(SimtProfile, DoubleAccumulationCountsFp64) {
  Aligned<float> x(256), y(32);
  const simt::LaunchProfile fp64 = profile(RowSums<simt::f64>{x.get(), y.get()}, shape(1, 32));
  const simt::LaunchProfile fp32 = profile(RowSums<float>{x.get(), y.get()}, shape(1, 32));
  EXPECT_EQ(fp64.fp64, 256u);
  EXPECT_EQ(fp32.fp64, 0u);
}

// Planted: the last block's one thread adds all inputs. 16 blocks of 128 threads, n = 2048. Each
// block copying its own: 256 accesses a block, so on 16 slots the tail factor is 1, and on 12
// slots the second wave holds 4 blocks: 2 x 256 against 16 x 256 / 12, 1.5. Serial: blocks 0-14
// 256, block 15 2048 loads and 1 store; on 16 slots 2049 against (15 x 256 + 2049) / 16.
TEST(SimtProfile, SerialLastBlockRaisesTheTail) {
  const int n = 2048;
  Aligned<float> x(n), y(n);
  const simt::LaunchProfile balanced = profile(LastBlock{x.get(), y.get(), n, false}, shape(16, 128));
  const simt::LaunchProfile serial = profile(LastBlock{x.get(), y.get(), n, true}, shape(16, 128));
  EXPECT_DOUBLE_EQ(balanced.tail_factor(16), 1.0);
  EXPECT_DOUBLE_EQ(balanced.tail_factor(12), 1.5);
  EXPECT_EQ(serial.block_work.back(), 2049u);
  EXPECT_DOUBLE_EQ(serial.tail_factor(16), 2049.0 / ((15.0 * 256 + 2049) / 16));
  EXPECT_GT(serial.tail_factor(16), 5.0);
  // One lane of the last block: 2048 requests of 1 sector each.
  EXPECT_EQ(serial.loads.requests, 15u * 4 + 2048);
}

// Planted: a second load of the input. Requested bytes are twice the distinct bytes; loaded once, equal.
TEST(SimtProfile, ExtraPassDoublesRequestedOverDistinctBytes) {
  const int n = 256;
  Aligned<float> x(n), y(n);
  const simt::LaunchProfile one = profile(Doubled{x.get(), y.get(), false}, shape(2, 128));
  const simt::LaunchProfile two = profile(Doubled{x.get(), y.get(), true}, shape(2, 128));
  EXPECT_EQ(one.loads.bytes, 1024u);
  EXPECT_EQ(one.distinct_bytes_read, 1024u);
  EXPECT_EQ(two.loads.bytes, 2048u);
  EXPECT_EQ(two.distinct_bytes_read, 1024u);
  EXPECT_EQ(two.loads.requests, 2 * one.loads.requests);
}

// Divergent trip counts are grouped by visit: the k-th load of every lane that makes one is one
// request (lanes k..31, bytes 4k to 127 of line k: 4 - k / 8 sectors), 32 requests, 8 x (4 + 3 +
// 2 + 1) = 80 sectors, 4 x (32 + 31 + ... + 1) = 2112 bytes.
TEST(SimtProfile, DivergentLoopGroupsLanesByVisit) {
  Aligned<float> x(1024), y(32);
  EXPECT_EQ(traffic(profile(Triangle{x.get(), y.get()}, shape(1, 32)).loads), Traffic(32, 80, 32, 2112, 80));
}

// Lanes reading the same bytes: x[0] by all, 128 bytes requested in 1 sector, ideal 1; x[lane / 2],
// 128 bytes requested, 64 distinct in 2 sectors, ideal 2.
TEST(SimtProfile, LanesSharingBytesNeedFewerSectors) {
  Aligned<float> x(16), y(32);
  const simt::LaunchProfile p = profile(SharedBytes{x.get(), y.get()}, shape(1, 32));
  EXPECT_EQ(traffic(p.loads), Traffic(2, 3, 2, 256, 3));
  EXPECT_EQ(p.distinct_bytes_read, 64u);
}

// The layernorm forward's statistics in double (kernels/gpu_ops/layernorm.hpp), C = 64, 8 rows (one
// block of 8 warps). Per lane: the sum of its 2 columns (2), the mean (5 butterfly additions and
// a division: 6), the variance's 2 terms (subtraction, product, sum: 6), rstd (5 additions, a
// division, the epsilon, sqrt_, the reciprocal: 9), the 2 outputs' (x - m) s (4): 27, times 32
// lanes and 8 rows.
TEST(SimtProfile, LayerNormForwardCountsItsDoubleStatistics) {
  const int N = 8, C = 64;
  Aligned<float> out(N * C), mean(N), rstd(N), inp(N * C), weight(C), bias(C);
  const eth::kernels::gpu_ops::LayerNormForwardKernel<float> k{out.get(),    mean.get(),   rstd.get(), inp.get(),
                                                             weight.get(), bias.get(), N,          C};
  const simt::LaunchProfile p = profile(k, eth::kernels::gpu_ops::layernorm_shape(N));
  EXPECT_EQ(p.fp64, 27u * 32 * N);
}

// The per-sample means of the token losses in double (the classifier's, kernels/gpu_ops/
// classifier16.hpp, and the fp32 cross-entropy's, crossentropy.hpp), B 3, T 10, one block of
// 128 threads: each of the 3 threads adds its 10 losses and divides once, 11 FP64 operations.
TEST(SimtProfile, SampleMeansCountTheirDoubleSums) {
  const int B = 3, T = 10;
  Aligned<float> sample_losses(B), token_losses(B * T);
  Aligned<double> token_loss(B * T);
  namespace ops = eth::kernels::gpu_ops;
  EXPECT_EQ(profile(ops::SampleMeanLossesKernel{sample_losses.get(), token_losses.get(), B, T}, shape(1, 128)).fp64,
            3u * 11);
  EXPECT_EQ(profile(ops::SampleMeanKernel{sample_losses.get(), token_loss.get(), B, T}, shape(1, 128)).fp64, 3u * 11);
}

// 3 blocks of 64 threads (2 warps): 6 mma, 2 x 192 special-function calls, 2 barriers a block,
// 192 atomics on 4 addresses.
TEST(SimtProfile, InstructionsAndAtomicsMatchTheHandCount) {
  Aligned<unsigned> counters(4);
  Aligned<float> out(192);
  const simt::LaunchProfile p = profile(Instructions{counters.get(), out.get()}, shape(3, 64));
  EXPECT_EQ(p.mma, 6u);
  EXPECT_EQ(p.special, 384u);
  EXPECT_EQ(p.barriers, 6u);
  EXPECT_EQ(p.atomics, 192u);
  EXPECT_EQ(p.atomic_addresses, 4u);
  EXPECT_EQ(counters.get()[0], 48u);
}

TEST(SimtProfile, BoundedKernelsAreNamedAsTheirEntry) {
  Aligned<float> out(32);
  EXPECT_EQ(profile(Bounded{out.get()}, shape(1, 32)).name,
            "void eth::kernels::cuda::simt_entry_bounded<profile_test::Bounded>(T1)");
}

}  // namespace

// The kernel time model (kernels/simt/time_model.hpp) on hand-made counter records, whose
// predictions follow from the formulas by hand: a DRAM-bound record, its last wave, a grid that
// fills half the SMs, tensor- and FP64-bound records, the L2 re-read rule, blocks per SM from
// each limit, a GEMM's roofline; the GPU catalog's lookups; and simt::scaled, the profile of a
// larger micro-batch from a smaller one, against whole runs of the flash attention forward and
// the fused residual + layernorm forward at B 2. No test here runs or asserts on a wall time.
#include <cmath>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/emulated/host_launch.hpp"
#include "kernels/gpu_ops/flash_attention16.hpp"
#include "kernels/gpu_ops/layernorm16.hpp"
#include "kernels/gpu_peaks.hpp"
#include "kernels/simt/time_model.hpp"

namespace simt = eth::kernels::simt;
using eth::kernels::bf16;
using eth::kernels::GpuPeak;

namespace {

const GpuPeak& h200() {
  const GpuPeak* g = eth::kernels::find_gpu_model("H200");
  EXPECT_NE(g, nullptr);
  return *g;
}

// `blocks` blocks of 256 threads, each of work 100, reading `bytes` distinct bytes once.
simt::LaunchProfile streaming(unsigned blocks, uint64_t bytes) {
  simt::LaunchProfile p;
  p.grid = simt::Dim3(blocks);
  p.block = simt::Dim3(256);
  p.distinct_bytes_read = bytes;
  p.loads.bytes = bytes;
  p.loads.sectors = bytes / 32;
  p.loads.lines = bytes / 128;
  p.loads.requests = bytes / 128;
  p.block_work.assign(blocks, 100);
  return p;
}

TEST(TimeModel, DramBoundRecordIsBytesOverBandwidthPlusLaunch) {
  const simt::TimeModelConstants k;
  // H200: 132 SMs x 8 blocks of 256 threads = 1056 slots, one full wave.
  const simt::LaunchProfile p = streaming(1056, 1'000'000'000);
  const simt::KernelTime t = simt::predict(p, h200(), k);
  const double dram_us = 1e9 / (4800e9 * k.dram_fraction) * 1e6;
  EXPECT_EQ(t.bound, simt::Resource::dram);
  EXPECT_EQ(t.blocks_per_sm, 8);
  EXPECT_DOUBLE_EQ(t.tail, 1.0);
  EXPECT_EQ(t.dram_bytes, 1'000'000'000u);
  EXPECT_NEAR(t.us[0], dram_us, 1e-9 * dram_us);
  EXPECT_NEAR(t.predicted_us, dram_us + k.launch_us, 1e-9 * dram_us);
  // L2: 1e9 bytes of sectors at 10.1 TB/s x 0.75, below DRAM's time.
  EXPECT_NEAR(t.us[static_cast<int>(simt::Resource::l2)], 1e9 / (10100e9 * k.l2_fraction) * 1e6, 1e-6);
}

TEST(TimeModel, OneBlockPastTheWaveAddsTheTail) {
  const simt::TimeModelConstants k;
  const simt::LaunchProfile p = streaming(1057, 1'000'000'000);
  const simt::KernelTime t = simt::predict(p, h200(), k);
  // Two waves of work 100 against 1057 x 100 / 1056 balanced.
  EXPECT_DOUBLE_EQ(t.tail, 200.0 / (1057.0 * 100 / 1056));
  EXPECT_NEAR(t.predicted_us, t.us[0] * t.tail + k.launch_us, 1e-9);
}

TEST(TimeModel, HalfTheSmsGetHalfTheRates) {
  const simt::TimeModelConstants k;
  const simt::KernelTime full = simt::predict(streaming(1056, 50'000'000), h200(), k);
  const simt::KernelTime half = simt::predict(streaming(66, 50'000'000), h200(), k);
  EXPECT_NEAR(half.us[0], 2 * full.us[0], 1e-9);
}

TEST(TimeModel, TensorAndFp64BoundRecords) {
  const simt::TimeModelConstants k;
  simt::LaunchProfile p = streaming(1056, 1024);
  p.mma = 1'000'000;
  simt::KernelTime t = simt::predict(p, h200(), k);
  EXPECT_EQ(t.bound, simt::Resource::tensor);
  EXPECT_NEAR(t.predicted_us, 4.096e9 / (989e12 * k.mma_fraction) * 1e6 + k.launch_us, 1e-9);
  p.fp64 = 1'000'000'000;
  t = simt::predict(p, h200(), k);
  EXPECT_EQ(t.bound, simt::Resource::fp64);
  EXPECT_NEAR(t.predicted_us, 1e9 / (34e12 / 2) * 1e6 + k.launch_us, 1e-9);
  EXPECT_STREQ(simt::resource_name(t.bound), "fp64");
}

TEST(TimeModel, RereadsMissOnlyWhenTheResidentBlocksOverflowL2) {
  const GpuPeak& g = h200();
  simt::LaunchProfile p = streaming(1056, 10'000'000);
  p.loads.bytes = 30'000'000;  // every byte read three times
  EXPECT_EQ(simt::dram_bytes(p, g.sm, 8), 10'000'000u);
  p = streaming(1056, 100'000'000);
  p.loads.bytes = 300'000'000;
  EXPECT_EQ(simt::dram_bytes(p, g.sm, 8), 300'000'000u);
  // The same reads over 10,560 blocks: a tenth resident at once, 10 MB, fits.
  p.grid = simt::Dim3(10560);
  EXPECT_EQ(simt::dram_bytes(p, g.sm, 8), 100'000'000u);
}

TEST(TimeModel, BlocksPerSmTakeEachLimit) {
  const GpuPeak& g = h200();
  simt::LaunchProfile p;
  p.block = simt::Dim3(128);
  EXPECT_EQ(simt::blocks_per_sm(g.sm, p), 16);  // 2048 threads
  p.block = simt::Dim3(32);
  EXPECT_EQ(simt::blocks_per_sm(g.sm, p), 32);  // the block limit
  p.block = simt::Dim3(128);
  p.shared_bytes = 100 * 1024;
  EXPECT_EQ(simt::blocks_per_sm(g.sm, p), 2);  // 227 KB
  p.shared_bytes = 0;
  EXPECT_EQ(simt::blocks_per_sm(g.sm, p, 255), 2);  // 4 warps x 8192 registers of 65,536
  p.block = simt::Dim3(1024);
  EXPECT_EQ(simt::blocks_per_sm(eth::kernels::find_gpu_model("T4")->sm, p), 1);
}

TEST(TimeModel, GemmIsItsRoofline) {
  const simt::TimeModelConstants k;
  const double flops = 2.0 * 4096 * 4096 * 4096;
  EXPECT_NEAR(simt::gemm_us(4096, 4096, 4096, 2, h200(), k), flops / (989e12 * k.gemm_efficiency) * 1e6 + k.launch_us,
              1e-9);
  // A skinny one is bound by its bytes: (1 x 4096) x (4096 x 4096).
  const double bytes = 2.0 * (4096 + 4096.0 * 4096 + 4096);
  EXPECT_NEAR(simt::gemm_us(1, 4096, 4096, 2, h200(), k), bytes / (4800e9 * k.dram_fraction) * 1e6 + k.launch_us,
              1e-9);
}

TEST(GpuCatalog, ModelsByNameAndDevicesByPattern) {
  EXPECT_EQ(eth::kernels::find_gpu_model("h200"), eth::kernels::find_gpu_peak("NVIDIA H200"));
  EXPECT_EQ(eth::kernels::find_gpu_model("X100"), nullptr);
  EXPECT_EQ(eth::kernels::find_gpu_model("A10"), nullptr);  // in the peaks, not in the time model
  const GpuPeak* l40s = eth::kernels::find_gpu_peak("NVIDIA L40S");
  ASSERT_NE(l40s, nullptr);
  EXPECT_STREQ(l40s->pattern, "L40S");  // not L4's entry
  EXPECT_EQ(eth::kernels::gpu_models(), "H200, H100, A100, L40S, V100, T4");
  for (const char* name : {"H200", "H100", "A100", "L40S", "V100", "T4"}) {
    const GpuPeak* g = eth::kernels::find_gpu_model(name);
    ASSERT_NE(g, nullptr) << name;
    EXPECT_GT(g->sm.sms * g->sm.clock_mhz * g->sm.l2_bandwidth_gbs * g->sm.fp64_tflops * g->sm.shared_kb, 0) << name;
    EXPECT_GT(g->bf16 > 0 ? g->bf16 : g->fp16, 0) << name;
  }
}

// n values at a 256-byte boundary, filled with a small pattern.
template <class T>
std::vector<T*> buffers(std::vector<void*>& held, std::initializer_list<size_t> sizes) {
  std::vector<T*> out;
  for (size_t n : sizes) {
    void* p = std::aligned_alloc(256, (n * sizeof(T) + 255) / 256 * 256);
    std::memset(p, 0, n * sizeof(T));
    held.push_back(p);
    out.push_back(static_cast<T*>(p));
  }
  return out;
}

// The flash forward and the fused residual + layernorm forward at B 1, each scaled to B 2, against
// the same kernels run at B 2: every count equal, the blocks' work equal, but for the distinct
// bytes of data every copy shares.
constexpr uint64_t kWeight = 768 * sizeof(bf16);  // the layernorm's weight and bias buffer

std::vector<simt::LaunchProfile> forwards(int B, int T, uint64_t sample_blocks = 0) {
  const int C = 768, NH = 12, N = B * T;
  std::vector<void*> held;
  auto e = buffers<bf16>(held, {size_t(N) * 3 * C, size_t(N) * C, size_t(N) * C, size_t(N) * C, size_t(N) * C,
                                size_t(N) * C, size_t(C)});
  auto f = buffers<float>(held, {size_t(B) * NH * T, size_t(N), size_t(N)});
  eth::kernels::emulated::HostLaunch launch;
  launch.set_counters(true, {sample_blocks});
  eth::kernels::gpu_ops::attention_forward16<eth::kernels::emulated::HostLaunch, bf16>(
      launch, e[1], f[0], e[0], B, T, eth::kernels::AttentionHeads::multi_head(C, NH));
  eth::kernels::gpu_ops::fused_residual_layernorm_forward16<eth::kernels::emulated::HostLaunch, bf16>(
      launch, e[2], e[3], f[1], f[2], e[4], e[5], e[6], e[6], N, C);
  std::vector<simt::LaunchProfile> out = launch.profiles();
  for (void* p : held) std::free(p);
  return out;
}

// Every count of `s`, a profile scaled or sampled from a smaller run, equals the whole run's `w`
// but for the distinct bytes read, `distinct_read` (data the copies share is counted per copy).
void expect_counts_of_whole_run(const simt::LaunchProfile& s, const simt::LaunchProfile& w, uint64_t distinct_read) {
    EXPECT_EQ(s.grid.x, w.grid.x);
    EXPECT_EQ(s.grid.y, w.grid.y);
    EXPECT_EQ(s.loads.requests, w.loads.requests);
    EXPECT_EQ(s.loads.sectors, w.loads.sectors);
    EXPECT_EQ(s.stores.sectors, w.stores.sectors);
    EXPECT_EQ(s.loads.bytes, w.loads.bytes);
    EXPECT_EQ(s.distinct_bytes_read, distinct_read);
    EXPECT_EQ(s.distinct_bytes_written, w.distinct_bytes_written);
    EXPECT_EQ(s.shared_loads.wavefronts + s.ldmatrix.wavefronts, w.shared_loads.wavefronts + w.ldmatrix.wavefronts);
    EXPECT_EQ(s.mma, w.mma);
    EXPECT_EQ(s.special, w.special);
    EXPECT_EQ(s.fp64, w.fp64);
    EXPECT_EQ(s.block_work, w.block_work);
}

TEST(TimeModel, ScaledProfileEqualsTheWholeRun) {
  const std::vector<simt::LaunchProfile> one = forwards(1, 128), two = forwards(2, 128);
  ASSERT_EQ(one.size(), 2u);
  ASSERT_EQ(two.size(), 2u);
  for (size_t i = 0; i < one.size(); i++) {
    simt::Dim3 grid = one[i].grid;
    (grid.y > 1 ? grid.y : grid.x) *= 2;
    SCOPED_TRACE(two[i].dialect_name);
    // The layernorm's weight and bias (one buffer of C bf16 here) serve every row: the copy
    // counts them again.
    expect_counts_of_whole_run(simt::scaled(one[i], grid), two[i], two[i].distinct_bytes_read + (i == 1 ? kWeight : 0));
  }
}

// Counting 12 blocks of each launch at B 2 and extending them: the flash forward's grid (1 x 24:
// B x NH along y) counts 12 whole rows, the layernorm's (32 blocks of rows along x) its first 12
// of 32; each equals the whole run, as the blocks of each are copies of one another's work.
TEST(TimeModel, SampledLaunchEqualsTheWholeRun) {
  const std::vector<simt::LaunchProfile> sampled = forwards(2, 128, 12), whole = forwards(2, 128);
  ASSERT_EQ(sampled.size(), 2u);
  ASSERT_EQ(whole.size(), 2u);
  for (size_t i = 0; i < sampled.size(); i++) {
    SCOPED_TRACE(whole[i].dialect_name);
    EXPECT_EQ(sampled[i].sampled_blocks, 12u);
    EXPECT_EQ(whole[i].sampled_blocks, 0u);
    // The layernorm's weight, read by the 12 blocks counted, is extended with them.
    const double copies = static_cast<double>(whole[i].grid.count()) / 12.0;
    const uint64_t weight = i == 1 ? kWeight : 0;
    expect_counts_of_whole_run(
        sampled[i], whole[i],
        whole[i].distinct_bytes_read - weight + static_cast<uint64_t>(std::llround(static_cast<double>(weight) * copies)));
  }
  EXPECT_EQ(simt::counted_blocks(simt::Dim3(4, 24), {10}), 8u);    // two whole rows of 4
  EXPECT_EQ(simt::counted_blocks(simt::Dim3(40), {10}), 10u);      // the first 10 of a long row
  EXPECT_EQ(simt::counted_blocks(simt::Dim3(4, 2), {10}), 8u);     // all: no more than the cap
  EXPECT_EQ(simt::counted_blocks(simt::Dim3(40), {0}), 40u);       // no cap
  EXPECT_EQ(simt::counted_blocks(simt::Dim3(4, 24), {40, 3}), 36u);  // 9 rows: groups of 3
  EXPECT_EQ(simt::counted_blocks(simt::Dim3(4, 24), {10, 3}), 12u);  // one group past the cap
  EXPECT_EQ(simt::counted_blocks(simt::Dim3(4, 25), {40, 3}), 40u);  // 25 rows: no groups of 3
}

TEST(TimeModel, ScaledWorkMultipliesEachBlock) {
  simt::LaunchProfile p = streaming(4, 4096);
  p.block_work = {1, 2, 3, 4};
  const simt::LaunchProfile s = simt::scaled(p, p.grid, 3);
  EXPECT_EQ(s.block_work, (std::vector<uint64_t>{3, 6, 9, 12}));
  EXPECT_EQ(s.distinct_bytes_read, 3u * 4096);
  EXPECT_THROW(simt::scaled(p, simt::Dim3(6)), std::invalid_argument);
}

// AdamW's launch at one and two layers (3 and 5 segments) extrapolated to four: each layer adds
// two segments' blocks, bytes and requests.
TEST(TimeModel, ExtrapolatedGrowsTheGridByEachLayersBlocks) {
  simt::LaunchProfile one = streaming(3, 3 * 4096), two = streaming(5, 5 * 4096);
  one.block_work = {1, 2, 3};
  two.block_work = {1, 2, 3, 4, 5};
  const simt::LaunchProfile four = simt::extrapolated(one, two, 4);
  EXPECT_EQ(four.grid.x, 9u);
  EXPECT_EQ(four.block_work, (std::vector<uint64_t>{1, 2, 3, 4, 5, 4, 5, 4, 5}));
  EXPECT_EQ(four.distinct_bytes_read, 9u * 4096);
  EXPECT_EQ(four.loads.requests, 9u * 4096 / 128);
  EXPECT_EQ(simt::extrapolated(one, two, 2).grid.x, 5u);
  simt::LaunchProfile rows = streaming(5, 5 * 4096);
  rows.grid = simt::Dim3(1, 5);
  EXPECT_THROW(simt::extrapolated(one, rows, 4), std::invalid_argument);
}

}  // namespace

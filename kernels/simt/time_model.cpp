#include "kernels/simt/time_model.hpp"

#include <algorithm>
#include <cassert>

namespace eth::kernels::simt {

const char* resource_name(Resource r) {
  switch (r) {
    case Resource::dram: return "dram";
    case Resource::l2: return "l2";
    case Resource::l1_shared: return "l1/shared";
    case Resource::tensor: return "tensor";
    case Resource::sfu: return "sfu";
    case Resource::fp64: return "fp64";
  }
  return "?";
}

int blocks_per_sm(const GpuSm& sm, const LaunchProfile& p, int registers_per_thread) {
  const int threads = std::max(1, static_cast<int>(p.block.x * p.block.y * p.block.z));
  int blocks = std::min(sm.max_blocks, sm.max_threads / threads);
  if (p.shared_bytes > 0)
    blocks = std::min(blocks, static_cast<int>(static_cast<size_t>(sm.shared_kb) * 1024 / p.shared_bytes));
  if (registers_per_thread > 0) {
    // Registers are allocated per warp in units of 256.
    const int warps = (threads + 31) / 32;
    const int per_warp = (registers_per_thread * 32 + 255) / 256 * 256;
    blocks = std::min(blocks, sm.registers / (per_warp * warps));
  }
  return std::max(blocks, 1);
}

uint64_t dram_bytes(const LaunchProfile& p, const GpuSm& sm, int blocks_per_sm) {
  const uint64_t distinct = p.distinct_bytes_read + p.distinct_bytes_written;
  const uint64_t blocks = static_cast<uint64_t>(p.grid.x) * p.grid.y * p.grid.z;
  const double resident_share = std::min(1.0, static_cast<double>(sm.sms) * blocks_per_sm / static_cast<double>(blocks));
  if (static_cast<double>(p.distinct_bytes_read) * resident_share <= sm.l2_mb * 1024.0 * 1024.0) return distinct;
  return std::max(distinct, p.loads.bytes + p.distinct_bytes_written);
}

KernelTime predict(const LaunchProfile& p, const GpuPeak& gpu, const TimeModelConstants& k,
                   int registers_per_thread) {
  assert(gpu.sm.model != nullptr && "the GPU must carry its SMs");
  const GpuSm& sm = gpu.sm;
  const double clock = sm.clock_mhz * 1e6;
  const uint64_t blocks = static_cast<uint64_t>(p.grid.x) * p.grid.y * p.grid.z;
  const double active = std::min(1.0, static_cast<double>(blocks) / sm.sms);  // share of the SMs busy
  const double sms = sm.sms * active;
  const double tensor_peak = (gpu.bf16 > 0 ? gpu.bf16 : gpu.fp16) * 1e12;
  KernelTime t;
  t.blocks_per_sm = blocks_per_sm(sm, p, registers_per_thread);
  t.dram_bytes = dram_bytes(p, sm, t.blocks_per_sm);
  auto set = [&](Resource r, double seconds) { t.us[static_cast<int>(r)] = seconds * 1e6; };
  set(Resource::dram, static_cast<double>(t.dram_bytes) / (gpu.bandwidth_gbs * 1e9 * k.dram_fraction * active));
  set(Resource::l2, static_cast<double>(p.loads.sectors + p.stores.sectors) * 32.0 /
                        (sm.l2_bandwidth_gbs * 1e9 * k.l2_fraction * active));
  const uint64_t wavefronts = p.loads.lines + p.stores.lines + p.shared_loads.wavefronts +
                              p.shared_stores.wavefronts + p.ldmatrix.wavefronts;
  set(Resource::l1_shared, static_cast<double>(wavefronts) / (sms * clock));
  set(Resource::tensor, p.mma == 0 ? 0.0 : static_cast<double>(p.mma) * 4096.0 / (tensor_peak * k.mma_fraction * active));
  set(Resource::sfu, static_cast<double>(p.special) / (sms * sm.sfu_per_clock * clock));
  set(Resource::fp64, p.fp64 == 0 ? 0.0 : static_cast<double>(p.fp64) / (sm.fp64_tflops * 1e12 / 2.0 * active));
  const auto worst = std::max_element(t.us.begin(), t.us.end());
  t.bound = static_cast<Resource>(worst - t.us.begin());
  t.tail = p.tail_factor(sm.sms * t.blocks_per_sm);
  t.predicted_us = *worst * t.tail + k.launch_us;
  return t;
}

double gemm_us(int64_t M, int64_t N, int64_t K, int element_bytes, const GpuPeak& gpu, const TimeModelConstants& k) {
  const double peak = (element_bytes == 4 ? gpu.fp32 : (gpu.bf16 > 0 ? gpu.bf16 : gpu.fp16)) * 1e12;
  const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const double bytes = static_cast<double>(element_bytes) * (static_cast<double>(M) * K + static_cast<double>(K) * N +
                                                             static_cast<double>(M) * N);
  const double seconds = std::max(flops / (peak * k.gemm_efficiency), bytes / (gpu.bandwidth_gbs * 1e9 * k.dram_fraction));
  return seconds * 1e6 + k.launch_us;
}

}  // namespace eth::kernels::simt

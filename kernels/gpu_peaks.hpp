// Dense peak rates of common GPUs, from NVIDIA's datasheets (SXM variants where both exist;
// TF32, bf16 and fp16 tensor cores without sparsity, fp16 with fp32 accumulation). 0 marks a
// format the GPU has no units for. The six GPUs the kernel time model names
// (kernels/simt/time_model.hpp) also carry their SMs: the figures from NVIDIA's architecture
// whitepapers (Volta V100, Turing TU102/T4, Ampere GA100, Ada AD102/L40S, Hopper H100) and the
// CUDA C Programming Guide's "Compute Capabilities" table (per-SM limits); each estimate is marked.
#pragma once

#include <cctype>
#include <string>

namespace eth::kernels {

// What one SM holds and does per clock, and the chip's caches: the time model's inputs.
struct GpuSm {
  const char* model = nullptr;  // the name kernel_profile --gpu takes; null: not in the time model
  int sms = 0;
  double clock_mhz = 0;         // boost SM clock
  double l2_mb = 0;
  double l2_bandwidth_gbs = 0;  // L2 to SMs
  int shared_bytes_per_clock = 128;  // per SM: 32 banks x 4 bytes, one wavefront a clock (all six)
  int max_blocks = 0, max_threads = 0, registers = 0;  // resident per SM
  int shared_kb = 0;            // shared memory a block's kernels may use per SM
  double fp64_tflops = 0;       // non-tensor FP64 (FMA counted as 2)
  int sfu_per_clock = 16;       // special-function results per SM a clock (4 SFUs x 4 partitions)
  int compute_capability = 0;   // x 10: 90 for sm_90
  double memory_gb = 0;         // device memory, datasheet GB (10^9 bytes)
};

struct GpuPeak {
  const char* pattern;      // matched as a substring of the CUDA device name
  double fp32, tf32, bf16, fp16;  // TFLOP/s
  double bandwidth_gbs;     // memory bandwidth
  GpuSm sm = {};
};

// More specific names first: "A100-SXM4-80GB" before "A100", "L40S" before "L4".
// L2 bandwidths: A100 5120 bytes/clock (GA100 whitepaper: 2.3x V100's) at 1410 MHz; V100 2155 and
// T4 1270 GB/s measured (Jia et al., "Dissecting the NVIDIA Volta/Turing GPU architecture via
// microbenchmarking", 2018/2019); H100/H200 and L40S are estimates (5120 bytes/clock at the
// boost clock, no vendor figure). FP64 of L40S estimated at 1/64 of FP32 (AD102's ratio).
inline constexpr GpuPeak kGpuPeaks[] = {
    {"H200", 67, 495, 989, 989, 4800, {"H200", 132, 1980, 50, 10100, 128, 32, 2048, 65536, 227, 34, 16, 90, 141}},
    {"H100", 67, 495, 989, 989, 3350, {"H100", 132, 1980, 50, 10100, 128, 32, 2048, 65536, 227, 34, 16, 90, 80}},
    {"A100-SXM4-80GB", 19.5, 156, 312, 312, 2039, {"A100", 108, 1410, 40, 7200, 128, 32, 2048, 65536, 163, 9.7, 16, 80, 80}},
    {"A100 80GB", 19.5, 156, 312, 312, 1935},
    {"A100", 19.5, 156, 312, 312, 1555},
    {"A10", 31.2, 62.5, 125, 125, 600},
    {"L40S", 91.6, 183, 362, 362, 864, {"L40S", 142, 2520, 96, 12900, 128, 24, 1536, 65536, 99, 1.4, 16, 89, 48}},
    {"L4", 30.3, 60, 121, 121, 300},
    {"V100", 15.7, 0, 0, 125, 900, {"V100", 80, 1530, 6, 2155, 128, 32, 2048, 65536, 96, 7.8, 16, 70, 32}},
    {"T4", 8.1, 0, 0, 65, 320, {"T4", 40, 1590, 4, 1270, 128, 16, 1024, 65536, 64, 0.25, 16, 75, 16}},
    {"RTX 4090", 82.6, 82.6, 165, 165, 1008},
    {"RTX 3090", 35.6, 35.6, 71, 71, 936},
};

inline const GpuPeak* find_gpu_peak(const std::string& device_name) {
  for (const GpuPeak& p : kGpuPeaks)
    if (device_name.find(p.pattern) != std::string::npos) return &p;
  return nullptr;
}

// The GPU the time model knows by `model` (case-insensitive: "H200", "h100", ...); null if none.
inline const GpuPeak* find_gpu_model(const std::string& model) {
  for (const GpuPeak& p : kGpuPeaks) {
    if (p.sm.model == nullptr || model.size() != std::char_traits<char>::length(p.sm.model)) continue;
    bool same = true;
    for (size_t i = 0; i < model.size(); i++)
      same = same && std::toupper(static_cast<unsigned char>(model[i])) == p.sm.model[i];
    if (same) return &p;
  }
  return nullptr;
}

// The models find_gpu_model knows, comma separated: "H200, H100, ...".
inline std::string gpu_models() {
  std::string names;
  for (const GpuPeak& p : kGpuPeaks)
    if (p.sm.model != nullptr) names += (names.empty() ? "" : ", ") + std::string(p.sm.model);
  return names;
}

}  // namespace eth::kernels

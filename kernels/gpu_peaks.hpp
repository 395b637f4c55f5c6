// Dense peak rates of common GPUs, from NVIDIA's datasheets (SXM variants where both exist;
// TF32, bf16 and fp16 tensor cores without sparsity, fp16 with fp32 accumulation). 0 marks a
// format the GPU has no units for.
#pragma once

#include <string>

namespace eth::kernels {

struct GpuPeak {
  const char* pattern;      // matched as a substring of the CUDA device name
  double fp32, tf32, bf16, fp16;  // TFLOP/s
  double bandwidth_gbs;     // memory bandwidth
};

inline const GpuPeak* find_gpu_peak(const std::string& device_name) {
  // More specific names first: "A100-SXM4-80GB" before "A100".
  static const GpuPeak kPeaks[] = {
      {"H200", 67, 495, 989, 989, 4800},        {"H100", 67, 495, 989, 989, 3350},
      {"A100-SXM4-80GB", 19.5, 156, 312, 312, 2039}, {"A100 80GB", 19.5, 156, 312, 312, 1935},
      {"A100", 19.5, 156, 312, 312, 1555},      {"A10", 31.2, 62.5, 125, 125, 600},
      {"L4", 30.3, 60, 121, 121, 300},          {"V100", 15.7, 0, 0, 125, 900},
      {"T4", 8.1, 0, 0, 65, 320},               {"RTX 4090", 82.6, 82.6, 165, 165, 1008},
      {"RTX 3090", 35.6, 35.6, 71, 71, 936},
  };
  for (const GpuPeak& p : kPeaks)
    if (device_name.find(p.pattern) != std::string::npos) return &p;
  return nullptr;
}

}  // namespace eth::kernels

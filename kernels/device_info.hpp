// What device this process computes on, as eth_topo reports it.
#pragma once

#include <string>

#include "kernels/device_settings.hpp"

namespace eth::kernels {

struct DeviceInfo {
  std::string name;             // GPU product name, or the CPU model
  bool gpu = false;
  std::string uuid;             // the GPU's UUID ("GPU-..."), "" for a CPU
  double memory_gb = 0;         // GPU memory, or this rank's share of host memory
  double peak_tflops_fp32 = 0;  // from a table of known GPUs, or cores x clock x FLOP/cycle
  double peak_tflops_tf32 = 0;
  double peak_tflops_bf16 = 0;
  double peak_tflops_fp16 = 0;  // fp16 tensor cores
  double memory_bandwidth_gbs = 0;  // CPUs: a 20 GB/s placeholder split among the ranks
};

// The device of node-local rank `local_rank` of `local_ranks` on this host: the GPU that
// select_backend gives it under `settings` (gpu_binding.hpp) when a GPU is usable,
// otherwise this rank's share of the CPU. Throws std::invalid_argument as select_backend does.
DeviceInfo describe_device(int local_rank, int local_ranks, const DeviceSettings& settings);

}  // namespace eth::kernels

#include "kernels/device_info.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "kernels/gpu_binding.hpp"
#include "kernels/gpu_peaks.hpp"
#ifdef ETH_HAVE_CUDA
#include "kernels/cuda/cuda_probe.hpp"
#endif

namespace eth::kernels {
namespace {

// First value of a "key : value" line of a /proc file.
std::string proc_field(const char* file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    return value;
  }
  return "";
}

// Appends rather than `" " + s`: GCC 12 warns falsely (-Wrestrict) on that form.
bool has_cpu_flag(const std::string& flags, const char* flag) {
  std::string haystack(" "), needle(" ");
  haystack.append(flags).push_back(' ');
  needle.append(flag).push_back(' ');
  return haystack.find(needle) != std::string::npos;
}

// "16384 kB" -> 16384; "" -> 0.
double leading_number(const std::string& text) { return text.empty() ? 0.0 : std::strtod(text.c_str(), nullptr); }

DeviceInfo describe_cpu_share(int local_ranks) {
  DeviceInfo d;
  d.name = proc_field("/proc/cpuinfo", "model name");
  if (d.name.empty()) d.name = "cpu";
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  const double mem_kb = leading_number(proc_field("/proc/meminfo", "MemTotal"));
  const double mhz = leading_number(proc_field("/proc/cpuinfo", "cpu MHz"));
  const std::string flags = proc_field("/proc/cpuinfo", "flags");
  // fp32 FLOP per cycle per core: two FMA pipes of 8 (AVX2) or 16 (AVX-512) lanes, 2 FLOP each.
  const double flop_per_cycle = has_cpu_flag(flags, "avx512f") ? 64 : has_cpu_flag(flags, "fma") ? 32 : 8;
  const double share = std::min(1.0, cores / local_ranks);
  d.memory_gb = mem_kb / 1e6 / local_ranks;
  d.peak_tflops_fp32 = share * mhz * 1e6 * flop_per_cycle / 1e12;
  d.memory_bandwidth_gbs = 20.0 / local_ranks;
  return d;
}

}  // namespace

DeviceInfo describe_device(int local_rank, int local_ranks, const DeviceSettings& settings) {
#ifdef ETH_HAVE_CUDA
  std::string why;
  if (usable_cuda_devices(&why) > 0) {
    // The GPU eth_train gives this rank (backend_select.hpp).
    const int visible = usable_cuda_devices(&why);
    const CudaDeviceProps props =
        cuda_device_props(bind_gpu(settings.cuda_devices.c_str(), local_rank, local_ranks, visible).device);
    DeviceInfo d;
    d.gpu = true;
    d.name = props.name;
    d.uuid = props.uuid;
    d.memory_gb = props.memory_bytes / 1e9;
    const GpuPeak* peak = find_gpu_peak(props.name);
    if (peak != nullptr) {
      d.peak_tflops_fp32 = peak->fp32;
      d.peak_tflops_tf32 = peak->tf32;
      d.peak_tflops_bf16 = peak->bf16;
      d.peak_tflops_fp16 = peak->fp16;
      d.memory_bandwidth_gbs = peak->bandwidth_gbs;
    }  // an unknown GPU keeps zero peaks, which load_topology rejects until they are filled in
    return d;
  }
#endif
  (void)local_rank;
  (void)settings;
  return describe_cpu_share(local_ranks);
}

}  // namespace eth::kernels

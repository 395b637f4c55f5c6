#include "kernels/backend_select.hpp"

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <vector>

#ifdef ETH_HAVE_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_probe.hpp"
#endif

namespace eth::kernels {
namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

}  // namespace

int cuda_device_for(const char* setting, int local_rank, int local_ranks, int gpus) {
  const std::string list = setting == nullptr ? "" : setting;
  const std::string where = "local rank " + std::to_string(local_rank) + " of " + std::to_string(local_ranks);
  if (list.empty()) {
    if (local_ranks > gpus)
      throw std::invalid_argument(where + ": expected a GPU of its own, but this host has " + std::to_string(gpus) +
                                  " for " + std::to_string(local_ranks) +
                                  " ranks (ETH_CUDA_DEVICES=0 lets them share GPU 0; ETH_BACKEND=cpu runs without)");
    return local_rank;
  }
  const std::vector<std::string> entries = split_commas(list);
  if (entries.size() != 1 && static_cast<int>(entries.size()) != local_ranks)
    throw std::invalid_argument("ETH_CUDA_DEVICES: expected one GPU number or one per local rank (" +
                                std::to_string(local_ranks) + "), got '" + list + "'");
  const std::string& entry = entries.size() == 1 ? entries[0] : entries[static_cast<size_t>(local_rank)];
  char* end = nullptr;
  const long device = std::strtol(entry.c_str(), &end, 10);
  if (entry.empty() || *end != '\0' || device < 0 || device >= gpus)
    throw std::invalid_argument("ETH_CUDA_DEVICES: " + where + ": expected a GPU number in [0, " +
                                std::to_string(gpus) + "), got '" + entry + "'");
  return static_cast<int>(device);
}

BackendChoice select_backend(int local_rank, int local_ranks) {
  const std::string wanted = env_or_empty("ETH_BACKEND");
  if (wanted == "cpu") return {make_cpu_backend(), "running on the CPU backend (ETH_BACKEND=cpu)"};
  if (wanted == "cpu-async")
    return {make_async_cpu_backend(), "running on the CPU backend in asynchronous mode (ETH_BACKEND=cpu-async)"};
  if (!wanted.empty() && wanted != "auto" && wanted != "cuda")
    throw std::invalid_argument("ETH_BACKEND: expected auto, cuda, cpu or cpu-async, got '" + wanted + "'");
#ifdef ETH_HAVE_CUDA
  std::string why;
  const int gpus = usable_cuda_devices(&why);
  if (gpus == 0) {
    if (wanted == "cuda") throw std::invalid_argument("ETH_BACKEND=cuda: expected a usable GPU, found none (" + why + ")");
    return {make_cpu_backend(), "no usable GPU (" + why + "): running on the CPU backend"};
  }
  const int device = cuda_device_for(std::getenv("ETH_CUDA_DEVICES"), local_rank, local_ranks, gpus);
  const CudaDeviceProps props = cuda_device_props(device);
  return {make_cuda_backend(device), "running on the CUDA backend: local rank " + std::to_string(local_rank) +
                                         " on GPU " + std::to_string(device) + " of " + std::to_string(gpus) +
                                         " (" + props.name + ")"};
#else
  (void)local_rank;
  (void)local_ranks;
  if (wanted == "cuda") throw std::invalid_argument("ETH_BACKEND=cuda: expected a build with CUDA, got a CPU-only build");
  return {make_cpu_backend(), "built without CUDA: running on the CPU backend"};
#endif
}

}  // namespace eth::kernels

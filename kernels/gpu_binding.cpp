#include "kernels/gpu_binding.hpp"

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace eth::kernels {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

// A whole non-negative decimal number, or -1.
int non_negative(const char* text) {
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return *end == '\0' && value >= 0 && value < (1L << 30) ? static_cast<int>(value) : -1;
}

}  // namespace

GpuBinding bind_gpu(const char* setting, int local_rank, int local_ranks, int visible) {
  const std::string list = setting == nullptr ? "" : setting;
  const std::string where = "local rank " + std::to_string(local_rank) + " of " + std::to_string(local_ranks);
  if (list.empty()) {
    if (visible == 1) return {0, "the one GPU this rank sees"};
    if (local_ranks > visible)
      throw std::invalid_argument(where + ": expected a GPU of its own, but this host shows " + std::to_string(visible) +
                                  " GPUs to each of its " + std::to_string(local_ranks) +
                                  " ranks (bind one per rank, e.g. srun --gpus-per-task=1; ETH_CUDA_DEVICES=0 lets them "
                                  "share GPU 0; ETH_BACKEND=cpu runs without)");
    return {local_rank, "GPU " + std::to_string(local_rank) + " of " + std::to_string(visible) + " by node-local rank"};
  }
  const std::vector<std::string> entries = split_commas(list);
  if (entries.size() != 1 && static_cast<int>(entries.size()) != local_ranks)
    throw std::invalid_argument("ETH_CUDA_DEVICES: expected one GPU number or one per local rank (" +
                                std::to_string(local_ranks) + "), got '" + list + "'");
  const std::string& entry = entries.size() == 1 ? entries[0] : entries[static_cast<size_t>(local_rank)];
  const int device = non_negative(entry.c_str());
  if (device < 0 || device >= visible)
    throw std::invalid_argument("ETH_CUDA_DEVICES: " + where + ": expected a GPU number in [0, " +
                                std::to_string(visible) + "), got '" + entry + "'");
  return {device, "ETH_CUDA_DEVICES"};
}

int slurm_tasks_on_node(const std::string& list, int node) {
  // Entries "N" or "N(xR)", comma-separated: R nodes of N tasks each.
  int first = 0;
  for (const std::string& entry : split_commas(list)) {
    const size_t paren = entry.find("(x");
    const int tasks = non_negative(entry.substr(0, paren).c_str());
    int repeat = 1;
    if (paren != std::string::npos) {
      if (entry.back() != ')') return -1;
      repeat = non_negative(entry.substr(paren + 2, entry.size() - paren - 3).c_str());
    }
    if (tasks < 0 || repeat < 1) return -1;
    if (node < first + repeat) return tasks;
    first += repeat;
  }
  return -1;
}

LauncherPlace launcher_place(const Environment& env) {
  LauncherPlace place;
  if ((place.local_rank = non_negative(env("OMPI_COMM_WORLD_LOCAL_RANK"))) >= 0) {
    place.local_ranks = non_negative(env("OMPI_COMM_WORLD_LOCAL_SIZE"));
    place.source = "OMPI_COMM_WORLD_LOCAL_RANK";
  } else if ((place.local_rank = non_negative(env("SLURM_LOCALID"))) >= 0) {
    const char* per_node = env("SLURM_STEP_TASKS_PER_NODE");
    const int node = non_negative(env("SLURM_NODEID"));
    if (per_node != nullptr && node >= 0) place.local_ranks = slurm_tasks_on_node(per_node, node);
    place.source = "SLURM_LOCALID";
  } else if ((place.local_rank = non_negative(env("MPI_LOCALRANKID"))) >= 0) {
    place.local_ranks = non_negative(env("MPI_LOCALNRANKS"));
    place.source = "MPI_LOCALRANKID";
  }
  if (place.local_ranks >= 0 && place.local_rank >= place.local_ranks) place.local_ranks = -1;  // inconsistent: unknown
  return place;
}

}  // namespace eth::kernels

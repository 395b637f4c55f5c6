#include "lib/job/topology_discovery.hpp"

#include <mpi.h>
#include <unistd.h>

#include <cstring>
#include <map>

#include "kernels/device_info.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth {
namespace {

constexpr int kNameLen = 128;

// One rank's report, fixed-size so that MPI_Gather can move it as bytes.
struct Report {
  char host[kNameLen];
  char device[kNameLen];
  char uuid[kNameLen];  // the GPU's UUID, "" on a CPU
  int gpu;
  int local_rank;
  double memory_gb, fp32, tf32, bf16, fp16, bandwidth_gbs;
};

void copy_name(char* dst, const std::string& src) {
  std::strncpy(dst, src.c_str(), kNameLen - 1);
  dst[kNameLen - 1] = '\0';
}

}  // namespace

Topology discover_topology(const DiscoveryOptions& options, std::vector<std::string>* rank_devices) {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(world_comm(), &rank));
  MPI_CHECK(MPI_Comm_size(world_comm(), &size));
  const HostPlace place = host_place();
  const int local_rank = place.local_rank, local_size = place.local_ranks;

  Report mine{};
  char host[kNameLen] = {};
  gethostname(host, kNameLen - 1);
  kernels::DeviceInfo dev;
  std::string error;
  try {
    dev = kernels::describe_device(local_rank, local_size, options.device);
  } catch (const std::invalid_argument& e) {  // ETH_CUDA_DEVICES names no GPU, or too few GPUs
    error = strprintf("rank %d on %s: %s", rank, host, e.what());
  }
  if (const std::string agreed = agreed_error(error); !agreed.empty()) throw InputError(agreed);
  copy_name(mine.host, host);
  copy_name(mine.device, dev.name);
  copy_name(mine.uuid, dev.uuid);
  mine.gpu = dev.gpu;
  mine.local_rank = local_rank;
  mine.memory_gb = dev.memory_gb;
  mine.fp32 = dev.peak_tflops_fp32;
  mine.tf32 = dev.peak_tflops_tf32;
  mine.bf16 = dev.peak_tflops_bf16;
  mine.fp16 = dev.peak_tflops_fp16;
  mine.bandwidth_gbs = dev.memory_bandwidth_gbs;
  std::vector<Report> all(rank == 0 ? static_cast<size_t>(size) : 0);
  MPI_CHECK(MPI_Gather(&mine, sizeof(Report), MPI_BYTE, all.data(), sizeof(Report), MPI_BYTE, 0, world_comm()));

  Topology topo;
  topo.source = "eth_topo";
  if (rank != 0) return topo;
  topo.network = options.network;
  std::map<std::string, int> type_of;
  std::map<std::string, int> node_of_host;
  for (int r = 0; r < size; r++) {
    const Report& rep = all[static_cast<size_t>(r)];
    if (rank_devices != nullptr)
      rank_devices->push_back(strprintf("rank %d: %s, local rank %d, %s%s%s", r, rep.host, rep.local_rank, rep.device,
                                        rep.uuid[0] ? " " : "", rep.uuid));
    const std::string type_name = strprintf("%s (%.0f GB)", rep.device, rep.memory_gb);
    if (!type_of.count(type_name)) {
      type_of[type_name] = static_cast<int>(topo.device_types.size());
      topo.device_types.push_back({.name = type_name, .memory_gb = rep.memory_gb, .peak_tflops_fp32 = rep.fp32,
                                   .peak_tflops_tf32 = rep.tf32, .peak_tflops_bf16 = rep.bf16,
                                   .peak_tflops_fp16 = rep.fp16, .memory_bandwidth_gbs = rep.bandwidth_gbs});
    }
    const std::string h = rep.host;
    if (topo.nodes.empty() || topo.nodes.back().name != h) {
      if (node_of_host.count(h))
        fail_input("mpirun/srun", "rank placement",
                   "each host's ranks contiguous in rank order (--map-by slot, Slurm block distribution)",
                   strprintf("host %s again at rank %d", h.c_str(), r));
      node_of_host[h] = static_cast<int>(topo.nodes.size());
      topo.nodes.push_back({h, rep.gpu ? options.intra_node_gpu : options.intra_node_cpu, {}, r});
    }
    Node& node = topo.nodes.back();
    topo.ranks.push_back({static_cast<int>(topo.nodes.size()) - 1, static_cast<int>(node.devices.size()), type_of[type_name]});
    node.devices.push_back(type_of[type_name]);
  }
  return topo;
}

}  // namespace eth

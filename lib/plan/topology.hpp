// The machines a job runs on, read from inputs/topologies/*.yaml: device types with their peak
// rates, nodes in rank order with their devices and intra-node link, and the network between
// nodes. Rank r is the r-th device listed (mpirun --map-by slot, Slurm block distribution).
#pragma once

#include <string>
#include <vector>

#include "kernels/precision.hpp"

namespace eth {

struct DeviceType {
  std::string name;
  double memory_gb = 0;            // usable device memory
  double peak_tflops_fp32 = 0;
  double peak_tflops_tf32 = 0;     // 0 where the device has no TF32 (CPUs, pre-Ampere GPUs)
  double peak_tflops_bf16 = 0;     // 0 where the device has no bf16 units
  double peak_tflops_fp16 = 0;     // 0 where the device has no fp16 tensor cores (CPUs, pre-Volta GPUs)
  double memory_bandwidth_gbs = 0;

  kernels::DeviceRates rates() const {
    return {peak_tflops_fp32, peak_tflops_tf32, peak_tflops_bf16, peak_tflops_fp16};
  }
};

struct Link {
  std::string kind;                // nvlink, pcie, shared-memory, infiniband, ethernet, ...
  double bandwidth_gbs = 0;        // GB/s, one direction
  double latency_us = 0;
};

struct Node {
  std::string name;
  Link link;                       // between devices of this node
  std::vector<int> devices;        // device type index of each device, in rank order
  int first_rank = 0;
};

struct RankPlace {
  int node = 0;
  int local_rank = 0;              // index among its node's devices
  int device_type = 0;
};

struct Topology {
  std::string source;              // file it was read from, for messages
  std::vector<DeviceType> device_types;
  std::vector<Node> nodes;
  Link network;                    // between nodes
  std::vector<RankPlace> ranks;    // derived: one per device, in rank order

  int world_size() const { return static_cast<int>(ranks.size()); }
  const DeviceType& device_of(int rank) const { return device_types[ranks[rank].device_type]; }
};

// Reads and validates; throws InputError naming the file and field.
Topology load_topology(const std::string& path);
// Writes YAML that load_topology reads back to the same topology.
void save_topology(const Topology& topology, const std::string& path);
// The same YAML as text, and back (topologies sent between ranks); `source` names it in messages.
std::string topology_yaml(const Topology& topology);
Topology topology_from_yaml(const std::string& text, const std::string& source);

}  // namespace eth

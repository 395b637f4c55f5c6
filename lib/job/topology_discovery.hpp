// Builds a topology from a running job: every rank reports its host and device, rank 0 groups
// them into nodes (in rank order) and device types (by name and memory).
#pragma once

#include <string>
#include <vector>

#include "kernels/device_settings.hpp"
#include "lib/plan/topology.hpp"

namespace eth {

struct DiscoveryOptions {
  Link intra_node_gpu{"pcie", 16, 5};           // PCIe 4.0 x16; pass NVLink figures where present
  Link intra_node_cpu{"shared-memory", 10, 1};
  Link network{"infiniband", 12.5, 5};           // 100 Gb/s
  kernels::DeviceSettings device;                // which GPU each rank takes (ETH_CUDA_DEVICES)
};

// Collective over every rank of the job (world_comm()); the result is complete on rank 0 only. A job whose hosts'
// ranks are not contiguous (round-robin placement) cannot be described and is an InputError.
// With `rank_devices`, rank 0 also gets one line per rank naming its host and device, and a
// GPU by its UUID ("rank 3: node1, local rank 1, NVIDIA H200 GPU-6f3c...").
Topology discover_topology(const DiscoveryOptions& options, std::vector<std::string>* rank_devices = nullptr);

}  // namespace eth

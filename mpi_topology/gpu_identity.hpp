// Which ranks compute on the same physical GPU, judged by the GPU's UUID (kernels/device.hpp),
// never by device index: under Slurm's --gpus-per-task every rank sees its own GPU as device 0.
// NCCL refuses two ranks of one communicator on one GPU, so this decides whether the node-local
// sums can run on NCCL.
#pragma once

#include <string>
#include <vector>

namespace eth {

struct RankGpu {
  std::string host;
  std::string uuid;  // "" for a rank that computes on the CPU
};

// Collective over every rank of the job: each rank's host and GPU UUID, by world rank.
std::vector<RankGpu> gather_rank_gpus(const std::string& my_uuid);

// Why NCCL cannot sum inside the nodes of `node_of_rank` (by world rank, as the topology declares
// nodes), in one line naming the first rank (and host and device) in the way: a rank without a
// GPU, or two ranks of one node on one GPU. "" when every rank of every node has a GPU of its own.
std::string nccl_obstacle(const std::vector<int>& node_of_rank, const std::vector<RankGpu>& gpus);

}  // namespace eth

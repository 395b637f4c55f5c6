#include <cstdlib>
#include <string>
#include <vector>

#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/sum_reducer.hpp"

namespace eth {
namespace {

// True when no two ranks of one node (as the topology declares nodes: the members of the
// node-local NCCL communicators) compute on the same GPU, which NCCL refuses, and every rank is
// on a GPU. Collective over MPI_COMM_WORLD.
bool own_gpu_in_every_node(int cuda_device, const std::vector<int>& node_of_rank) {
  const int world = static_cast<int>(node_of_rank.size());
  std::vector<int> devices(static_cast<size_t>(world));
  MPI_CHECK(MPI_Allgather(&cuda_device, 1, MPI_INT, devices.data(), 1, MPI_INT, MPI_COMM_WORLD));
  for (int i = 0; i < world; i++) {
    if (devices[i] < 0) return false;
    for (int j = 0; j < i; j++)
      if (node_of_rank[i] == node_of_rank[j] && devices[i] == devices[j]) return false;
  }
  return true;
}

}  // namespace

ReducerChoice choose_sum_reducer(kernels::Device& device, const std::vector<int>& node_of_rank) {
  const char* setting = std::getenv("ETH_NCCL");
  const bool allowed = setting == nullptr || std::string(setting) != "0";
  // Every rank takes the same path: NCCL only if every node qualifies.
  int wanted = allowed ? 1 : 0;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &wanted, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  ReducerChoice choice;
  if (wanted == 1 && own_gpu_in_every_node(device.cuda_device(), node_of_rank)) {
    const std::string why_not = make_nccl_reducer(device, &choice.reducer);
    if (!why_not.empty())
      choice.error = "GPU " + std::to_string(device.cuda_device()) +
                     ": expected NCCL for the reductions inside a node (ETH_NCCL=0 reduces through MPI instead): " +
                     why_not;
    return choice;
  }
  choice.reducer = make_mpi_reducer(device);
  return choice;
}

}  // namespace eth

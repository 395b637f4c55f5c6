#include <cstdlib>
#include <string>
#include <vector>

#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/sum_reducer.hpp"

namespace eth {
namespace {

// True when every rank on this host computes on a GPU of its own (NCCL refuses two ranks of
// one communicator on one GPU). Collective over the host's ranks.
bool own_gpu_on_this_host(int cuda_device) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_Comm host;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host));
  int size = 1;
  MPI_CHECK(MPI_Comm_size(host, &size));
  std::vector<int> devices(static_cast<size_t>(size));
  MPI_CHECK(MPI_Allgather(&cuda_device, 1, MPI_INT, devices.data(), 1, MPI_INT, host));
  MPI_CHECK(MPI_Comm_free(&host));
  for (size_t i = 0; i < devices.size(); i++)
    for (size_t j = 0; j < i; j++)
      if (devices[i] < 0 || devices[i] == devices[j]) return false;
  return !devices.empty() && devices[0] >= 0;
}

}  // namespace

ReducerChoice choose_sum_reducer(kernels::Device& device) {
  const char* setting = std::getenv("ETH_NCCL");
  const bool allowed = setting == nullptr || std::string(setting) != "0";
  // Every rank takes the same path: NCCL only if every host qualifies.
  int eligible = allowed && own_gpu_on_this_host(device.cuda_device()) ? 1 : 0;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &eligible, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  ReducerChoice choice;
  if (eligible == 1) {
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

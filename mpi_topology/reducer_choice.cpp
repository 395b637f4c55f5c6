#include <string>
#include <vector>

#include "mpi_topology/gpu_identity.hpp"
#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/stream_collectives.hpp"
#include "mpi_topology/sum_reducer.hpp"
#include "mpi_topology/wire_buffer.hpp"

namespace eth {
namespace {

// ETH_NCCL, ordered so that the job takes the least any rank allows.
enum NcclWish : int { kNever = 0, kWherePossible = 1, kRequired = 2, kEmulated = 3, kUnknown = 4 };

NcclWish nccl_wish(const std::string& s) {
  if (s.empty() || s == "auto") return kWherePossible;
  if (s == "0") return kNever;
  if (s == "1") return kRequired;
  if (s == "emulated") return kEmulated;
  return kUnknown;
}

// Why the emulation cannot run here, or "".
std::string emulation_obstacle(const kernels::Device& device) {
  if (!device.host_addressable())
    return "ETH_NCCL=emulated: expected a CPU backend (ETH_BACKEND=cpu-async), got " + device.name();
  int threads = MPI_THREAD_SINGLE;
  MPI_CHECK(MPI_Query_thread(&threads));
  if (threads != MPI_THREAD_MULTIPLE)
    return "ETH_NCCL=emulated: expected an MPI with MPI_THREAD_MULTIPLE, this one provides less";
  return "";
}

// The reducer and the stage transfers' streams for ETH_NCCL = `setting`, as choose_comm_paths says.
CommChoice choose_streams(kernels::Device& device, const std::vector<int>& node_of_rank, bool sharded,
                          const std::string& setting) {
  CommChoice choice;
  int wish = nccl_wish(setting);
  if (wish == kUnknown) {
    choice.error = "ETH_NCCL: expected auto, 0, 1 or emulated, got '" + setting + "'";
    wish = kNever;
  }
  // Every rank takes the same path: the least any rank allows, NCCL only if every node qualifies.
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &wish, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (wish == kEmulated) {
    const std::string obstacle = emulation_obstacle(device);
    if (!obstacle.empty()) {
      if (choice.error.empty()) choice.error = obstacle;
      choice.reducer = make_mpi_reducer(device);
    } else {
      choice.reducer = sharded ? make_mpi_reducer(device) : make_stream_reducer(device, make_emulated_streams(device));
      choice.transfer_streams = make_emulated_streams(device);
    }
    return choice;
  }
  const std::string obstacle = nccl_obstacle(node_of_rank, gather_rank_gpus(device.gpu_uuid()));
  if (wish == kNever || !obstacle.empty()) {
    if (wish == kRequired && choice.error.empty())
      choice.error = "ETH_NCCL=1: expected every rank of a node on a GPU of its own, but " + obstacle;
    choice.reducer = make_mpi_reducer(device);
    return choice;
  }
  std::unique_ptr<StreamCollectives> streams;
  const std::string why_not = make_nccl_streams(device, &streams);
  if (why_not.empty()) {
    choice.reducer = sharded ? make_mpi_reducer(device) : make_stream_reducer(device, std::move(streams));
    make_nccl_streams(device, &choice.transfer_streams);
  } else if (choice.error.empty()) {
    choice.error = "GPU " + device.gpu_uuid() +
                   ": expected NCCL for the reductions inside a node (ETH_NCCL=0 reduces through MPI instead): " + why_not;
  }
  return choice;
}

}  // namespace

bool nccl_emulation_requested(const CommSettings& settings) { return settings.nccl == "emulated"; }

CommChoice choose_comm_paths(kernels::Device& device, const std::vector<int>& node_of_rank, bool sharded,
                             const CommSettings& settings) {
  CommChoice choice = choose_streams(device, node_of_rank, sharded, settings.nccl);
  if (choice.transfer_streams) choice.communicator_bytes_estimate = nccl_communicator_bytes_estimate(settings);
  choice.sends_read_device_buffers = mpi_sends_read_device_buffers(device, mpi_cuda_aware(settings));
  return choice;
}

}  // namespace eth

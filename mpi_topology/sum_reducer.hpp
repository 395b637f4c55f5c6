// Sums of slices of one device buffer over process groups: the gradient reductions. One
// interface, two implementations chosen once per job (lib/ never asks which):
//   - MPI: the hierarchical sum of process_group.hpp on the buffer itself, or on a pinned mirror
//     when MPI cannot read device memory; started once the slice's data is final on the device.
//   - NCCL (CUDA builds, each rank of a node on its own GPU): the node-local reduce and
//     broadcast on NCCL communicators and streams of their own, ordered after the compute
//     stream by events; across nodes MPI among node leaders on a pinned mirror. The same logic
//     runs on an emulation of NCCL over the CPU backend (stream_collectives.hpp), which is how
//     CI covers it.
//
// Slices are registered once, in the same global order on every rank (a deadlock-free order
// for NCCL's in-order streams), and each step started in that order.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kernels/device.hpp"
#include "mpi_topology/comm_settings.hpp"
#include "mpi_topology/process_group.hpp"
#include "mpi_topology/stream_collectives.hpp"

namespace eth {

class SumReducer {
 public:
  virtual ~SumReducer() = default;
  // Registers data[0, n) (device memory) to be summed over `group` (this rank a member);
  // `what` names it for the watchdog ("reduction of block 1 (layers 1-2)", the same words on
  // every member). Returns the slice's index. Collective over the group's members (NCCL set-up).
  virtual int add_slice(const ProcessGroup& group, float* data, size_t n, const std::string& what) = 0;
  // The same for a slice cut into one shard per member (counts[i] floats for member i, in
  // member order; shard_collectives.hpp): each member receives its own shard's sum only.
  // Sharded optimizer state; the MPI reducer only.
  virtual int add_owner_slice(const ProcessGroup& group, float* data, const std::vector<size_t>& counts,
                              const std::string& what) = 0;
  // The work producing the slice has been enqueued on the compute stream: start its sum once
  // that work completes. In registration order.
  virtual void start(int slice) = 0;
  virtual void poll() = 0;  // advances started sums; never blocks
  // Waits for every started sum (through the watchdog, mpi_topology/watchdog.hpp); work enqueued on the compute stream afterwards sees the sums.
  virtual void finish() = 0;
  virtual std::string path() const = 0;  // one line for the log
};

std::unique_ptr<SumReducer> make_mpi_reducer(kernels::Device& device);

// Collective over MPI_COMM_WORLD, once per job: NCCL when every rank of each node (node_of_rank,
// by world rank, as the topology declares them) computes on a GPU of its own (by UUID,
// gpu_identity.hpp), else MPI, the same on every rank. ETH_NCCL: unset or "auto" as just said;
// "0" MPI always; "1" NCCL or an error naming the rank, host and GPU in the way; "emulated" the
// NCCL path on its CPU emulation (every rank as if on a GPU of its own; a CPU backend, and MPI
// with MPI_THREAD_MULTIPLE, which MpiSession asks for then). `error` (this rank's, for the
// caller to agree on) for a bad ETH_NCCL, NCCL required and impossible, or NCCL chosen but
// failing here.
// The stage-to-stage transfers follow the same choice: on the NCCL path they get streams of
// their own (lib/runtime/stage_transfers.hpp), even where `sharded` (sums to the shards' owners,
// which the MPI reducer alone does) gives the sums to MPI.
struct CommChoice {
  std::unique_ptr<SumReducer> reducer;
  std::unique_ptr<StreamCollectives> transfer_streams;  // null: stage transfers through MPI
  // What one of the streams' communicators is expected to take from the device, before any is
  // made (nccl_communicator_bytes_estimate); 0 without streams.
  size_t communicator_bytes_estimate = 0;
  // Whether MPI's sends and receives take the device's buffers as they are (wire_buffer.hpp).
  bool sends_read_device_buffers = true;
  std::string error;
};
CommChoice choose_comm_paths(kernels::Device& device, const std::vector<int>& node_of_rank, bool sharded,
                             const CommSettings& settings);
// ETH_NCCL=emulated: known before MPI_Init, which must then provide MPI_THREAD_MULTIPLE.
bool nccl_emulation_requested(const CommSettings& settings);

// The NCCL path (stream_reducer.cpp) on `streams`: NCCL's, or their emulation.
std::unique_ptr<SumReducer> make_stream_reducer(kernels::Device& device, std::unique_ptr<StreamCollectives> streams);

}  // namespace eth

// What the NCCL path needs of NCCL and of a GPU's streams and events, behind one interface with
// two implementations, so that the path's logic (stream_reducer.cpp) runs in CI without a GPU:
//   - NCCL on CUDA streams (nccl_streams.cpp, CUDA builds; ETH_NCCL=auto|1);
//   - an emulation over the asynchronous CPU backend (emulated_streams.cpp; ETH_NCCL=emulated):
//     every stream a queue on a thread of its own that runs its operations in order, every
//     collective a blocking MPI call on a communicator of its own. A collective therefore holds
//     its stream until every member has reached it, as NCCL's kernels do, and one rank that
//     issues a stream's collectives in another order than its peers hangs the job as NCCL would.
//
// The rules the caller keeps are NCCL's: each communicator's collectives are issued in the same
// order on every member; a stream runs its operations in issue order; work on one stream sees
// another stream's results only after waiting for an event recorded there.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

#include "kernels/device.hpp"
#include "mpi_topology/comm_settings.hpp"
#include "mpi_topology/wire_word.hpp"

namespace eth {

class StreamCollectives {
 public:
  using Stream = int;
  static constexpr Stream kCompute = 0;  // the device's compute stream (kernels/device.hpp)
  struct Event;                           // an implementation's event; owned by it
  struct Communicator;                    // an implementation's communicator; owned by it

  virtual ~StreamCollectives() = default;
  virtual std::string name() const = 0;  // "NCCL", or "NCCL (emulated ...)", for the log

  virtual Stream new_stream() = 0;
  // Collective over `members`: a communicator of them, ranked as in `members`.
  virtual Communicator* new_communicator(MPI_Comm members) = 0;
  virtual Event* new_event() = 0;  // a fresh event counts as done

  // Marks the work issued on `stream` so far.
  virtual void record(Event* event, Stream stream) = 0;
  // Work issued on `stream` from now on runs after the event's last record (as of this call).
  virtual void wait(Stream stream, Event* event) = 0;
  virtual bool done(Event* event) = 0;  // non-blocking

  // In place on `data` (device memory), over `comm`, issued on `stream`.
  virtual void all_reduce(float* data, size_t n, Communicator* comm, Stream stream) = 0;
  virtual void reduce(float* data, size_t n, int root, Communicator* comm, Stream stream) = 0;  // sum to root
  virtual void broadcast(float* data, size_t n, int root, Communicator* comm, Stream stream) = 0;
  // Point to point: a send is matched by the peer's receive on the same communicator, in issue
  // order, and holds its stream until the peer's receive runs (as NCCL's do). Sends and
  // receives issued between group_start() and group_end() run together (ncclGroupStart/End),
  // so that exchanges with several peers cannot deadlock on their order. `peer`: its rank in
  // the communicator.
  virtual void group_start() = 0;
  virtual void group_end() = 0;
  // n words (wire_word.hpp): a stage's rows of any element type.
  virtual void send(const WireWord* data, size_t n, int peer, Communicator* comm, Stream stream) = 0;
  virtual void recv(WireWord* data, size_t n, int peer, Communicator* comm, Stream stream) = 0;
  // Host and device memory, either direction, issued on `stream` (pinned host memory only).
  virtual void copy(void* dst, const void* src, size_t bytes, Stream stream) = 0;

  // "" while every issued operation has gone well; else the first failure, in words (NCCL's
  // asynchronous errors: a peer gone, a network error). Polled while waiting.
  virtual std::string async_error() = 0;
  // Aborts every communicator, so that nothing stays blocked on a peer that will not come; the
  // job ends after it. Any thread.
  virtual void abort() = 0;
  // Device memory the communicators made so far took at set-up, measured, in bytes (NCCL's own
  // buffers; 0 for the emulation, whose buffers are MPI's, in host memory).
  virtual size_t communicator_bytes() const = 0;
};

// What one NCCL communicator takes from the device, before any is made (the memory check counts
// it; the emulation's too, as if it were NCCL): NCCL_BUFFSIZE (4 MiB unless set) per channel,
// peer and direction, a ring's two peers, send and receive, on up to 16 channels (NVLink
// machines open that many). An upper estimate until bench/gpu/run.sh measures
// communicator_bytes() on the GPUs we run on.
inline size_t nccl_communicator_bytes_estimate(const CommSettings& settings) {
  const long long bytes = std::atoll(settings.nccl_buffsize.c_str());
  return (bytes > 0 ? static_cast<size_t>(bytes) : size_t{4} << 20) * 2 * 2 * 16;
}

// NCCL on `device`'s CUDA device. Returns "" and sets *out, or why NCCL cannot run here (no CUDA
// device, libnccl.so.2 not loadable, a CPU-only build).
std::string make_nccl_streams(kernels::Device& device, std::unique_ptr<StreamCollectives>* out);
// The emulation over `device`, a CPU backend (its compute stream is kCompute). Needs MPI with
// MPI_THREAD_MULTIPLE (mpi_session.hpp asks for it when ETH_NCCL=emulated).
std::unique_ptr<StreamCollectives> make_emulated_streams(kernels::Device& device);

}  // namespace eth

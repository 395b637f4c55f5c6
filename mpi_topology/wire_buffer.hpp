// How MPI reaches a device's buffers, decided once per job: directly when they are host memory,
// or when the MPI is CUDA-aware and the call is one that Open MPI's CUDA support covers; else
// through a pinned host mirror that copies are staged through on the device's compute stream
// (Debian's Open MPI is not CUDA-aware).
//
//   ETH_MPI_CUDA_AWARE  auto (default): ask the MPI (MPIX_Query_cuda_support); 0: never hand MPI
//                       device memory; 1: the MPI must be CUDA-aware (an error otherwise).
#pragma once

#include <cstddef>
#include <string>

#include "kernels/device.hpp"
#include "kernels/device_buffer.hpp"
#include "mpi_topology/comm_settings.hpp"

namespace eth {

// Whether MPI may be handed device memory at all, under ETH_MPI_CUDA_AWARE. Call after MPI_Init.
bool mpi_cuda_aware(const CommSettings& settings);
// "" when ETH_MPI_CUDA_AWARE is valid and satisfiable here, else one line saying what was
// expected (an unknown value, or 1 with an MPI that is not CUDA-aware). Call after MPI_Init.
std::string mpi_cuda_aware_error(const CommSettings& settings);

// Whether MPI may be handed `device`'s buffers as they are, by what Open MPI's CUDA support
// covers (its FAQ for v4.x): the send and receive calls, blocking or not, take device pointers
// where the MPI is CUDA-aware (`cuda_aware`: mpi_cuda_aware); the non-blocking collectives (every
// gradient sum and all-gather here) and the one-sided calls never do. Host memory always.
bool mpi_sends_read_device_buffers(const kernels::Device& device, bool cuda_aware);
bool mpi_collectives_read_device_buffers(const kernels::Device& device);
// One line for the log: which path each kind of message takes through MPI, and why.
std::string mpi_buffer_paths(const kernels::Device& device, const CommSettings& settings);

// A device buffer of n elements of T as MPI sees it (T: float for gradient sums, WireWord for
// stage transfers, lib/runtime/stage_transfers.hpp). Direct: wire() is the buffer itself and
// staging does nothing. Staged: wire() is a pinned mirror; stage_out() enqueues device -> mirror
// (record an event after it, and let MPI read the mirror once the event is done), stage_in()
// enqueues mirror -> device (call it once MPI has filled the mirror; later work on the stream
// sees it).
template <typename T>
class WireBuffer {
 public:
  WireBuffer() = default;
  WireBuffer(kernels::Device& device, T* buffer, size_t n, bool direct)
      : device_(&device), buffer_(buffer), n_(n), wire_(buffer) {
    if (!direct) {
      mirror_ = kernels::DeviceBuffer<T>(device, n, kernels::Memory::pinned);
      wire_ = mirror_.data();
    }
  }

  T* wire() { return wire_; }
  T* buffer() { return buffer_; }
  size_t size() const { return n_; }
  void stage_out() {
    if (wire_ != buffer_) device_->copy_to_host_async(wire_, buffer_, n_ * sizeof(T));
  }
  void stage_in() {
    if (wire_ != buffer_) device_->copy_to_device_async(buffer_, wire_, n_ * sizeof(T));
  }

 private:
  kernels::Device* device_ = nullptr;
  T* buffer_ = nullptr;
  size_t n_ = 0;
  kernels::DeviceBuffer<T> mirror_;  // (n) pinned, when staged
  T* wire_ = nullptr;
};

}  // namespace eth

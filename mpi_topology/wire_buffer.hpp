// How MPI reaches a device's buffers, decided once per job: directly when they are host memory
// or Open MPI reports CUDA support at run time, else through a pinned host mirror that copies
// are staged through on the device's compute stream (Debian's Open MPI is not CUDA-aware).
#pragma once

#include <cstddef>
#include <string>

#include "kernels/device.hpp"
#include "kernels/device_buffer.hpp"

namespace eth {

// True when MPI may be handed `device`'s buffers as they are.
bool mpi_reads_device_buffers(const kernels::Device& device);
// One line for the log: which path device buffers take through MPI, and why.
std::string mpi_buffer_path(const kernels::Device& device);

// A device buffer as MPI sees it. Direct: wire() is the buffer itself and staging does nothing.
// Staged: wire() is a pinned mirror; stage_out() enqueues device -> mirror (record an event
// after it, and let MPI read the mirror once the event is done), stage_in() enqueues
// mirror -> device (call it once MPI has filled the mirror; later work on the stream sees it).
class WireBuffer {
 public:
  WireBuffer() = default;
  WireBuffer(kernels::Device& device, float* buffer, size_t n, bool direct);

  float* wire() { return wire_; }
  float* buffer() { return buffer_; }
  size_t size() const { return n_; }
  void stage_out();
  void stage_in();

 private:
  kernels::Device* device_ = nullptr;
  float* buffer_ = nullptr;
  size_t n_ = 0;
  kernels::DeviceBuffer<float> mirror_;  // (n) pinned, when staged
  float* wire_ = nullptr;
};

}  // namespace eth

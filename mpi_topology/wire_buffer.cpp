#include "mpi_topology/wire_buffer.hpp"

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_Query_cuda_support
#endif

namespace eth {
namespace {

// Asked at run time, not at build time: the same binary may meet another Open MPI build.
bool mpi_is_cuda_aware() {
#ifdef MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

}  // namespace

bool mpi_reads_device_buffers(const kernels::Device& device) {
  return device.host_addressable() || mpi_is_cuda_aware();
}

std::string mpi_buffer_path(const kernels::Device& device) {
  if (device.host_addressable()) return "MPI on host buffers";
  if (mpi_is_cuda_aware()) return "MPI on device buffers (CUDA-aware MPI)";
  return "MPI through pinned host buffers (this MPI is not CUDA-aware)";
}

WireBuffer::WireBuffer(kernels::Device& device, float* buffer, size_t n, bool direct)
    : device_(&device), buffer_(buffer), n_(n), wire_(buffer) {
  if (!direct) {
    mirror_ = kernels::DeviceBuffer<float>(device, n, kernels::Memory::pinned);
    wire_ = mirror_.data();
  }
}

void WireBuffer::stage_out() {
  if (wire_ != buffer_) device_->copy_to_host_async(wire_, buffer_, n_ * sizeof(float));
}

void WireBuffer::stage_in() {
  if (wire_ != buffer_) device_->copy_to_device_async(buffer_, wire_, n_ * sizeof(float));
}

}  // namespace eth

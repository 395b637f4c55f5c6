#include "mpi_topology/wire_buffer.hpp"

#include <mpi.h>

#include <cstdlib>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_Query_cuda_support
#endif

namespace eth {
namespace {

// Asked at run time, not at build time: the same binary may meet another Open MPI build.
bool mpi_reports_cuda_support() {
#ifdef MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

std::string setting() {
  const char* value = std::getenv("ETH_MPI_CUDA_AWARE");
  return value == nullptr ? "" : value;
}

}  // namespace

bool mpi_cuda_aware() {
  const std::string s = setting();
  if (s == "0") return false;
  return mpi_reports_cuda_support();  // "1" is checked by mpi_cuda_aware_error at start-up
}

std::string mpi_cuda_aware_error() {
  const std::string s = setting();
  if (!s.empty() && s != "auto" && s != "0" && s != "1")
    return "ETH_MPI_CUDA_AWARE: expected auto, 0 or 1, got '" + s + "'";
  if (s == "1" && !mpi_reports_cuda_support())
    return "ETH_MPI_CUDA_AWARE=1: expected a CUDA-aware MPI, but this MPI says it is not (MPIX_Query_cuda_support); "
           "unset it to stage device buffers through pinned host memory";
  return "";
}

bool mpi_reads_device_buffers(const kernels::Device& device, MpiTraffic traffic) {
  if (device.host_addressable()) return true;
  return traffic == MpiTraffic::point_to_point && mpi_cuda_aware();
}

std::string mpi_buffer_paths(const kernels::Device& device) {
  if (device.host_addressable()) return "MPI on host buffers";
  if (mpi_cuda_aware())
    return "stage transfers on device buffers (CUDA-aware MPI); sums and all-gathers through pinned host buffers "
           "(Open MPI takes no device memory in non-blocking collectives)";
  return std::string("stage transfers, sums and all-gathers through pinned host buffers (") +
         (setting() == "0" ? "ETH_MPI_CUDA_AWARE=0" : "this MPI is not CUDA-aware") + ")";
}

}  // namespace eth

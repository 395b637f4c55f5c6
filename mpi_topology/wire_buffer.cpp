#include "mpi_topology/wire_buffer.hpp"

#include <mpi.h>

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

}  // namespace

bool mpi_cuda_aware(const CommSettings& settings) {
  if (settings.mpi_cuda_aware == "0") return false;
  return mpi_reports_cuda_support();  // "1" is checked by mpi_cuda_aware_error at start-up
}

std::string mpi_cuda_aware_error(const CommSettings& settings) {
  const std::string& s = settings.mpi_cuda_aware;
  if (!s.empty() && s != "auto" && s != "0" && s != "1")
    return "ETH_MPI_CUDA_AWARE: expected auto, 0 or 1, got '" + s + "'";
  if (s == "1" && !mpi_reports_cuda_support())
    return "ETH_MPI_CUDA_AWARE=1: expected a CUDA-aware MPI, but this MPI says it is not (MPIX_Query_cuda_support); "
           "unset it to stage device buffers through pinned host memory";
  return "";
}

bool mpi_sends_read_device_buffers(const kernels::Device& device, bool cuda_aware) {
  return device.host_addressable() || cuda_aware;
}

bool mpi_collectives_read_device_buffers(const kernels::Device& device) { return device.host_addressable(); }

std::string mpi_buffer_paths(const kernels::Device& device, const CommSettings& settings) {
  if (device.host_addressable()) return "MPI on host buffers";
  if (mpi_cuda_aware(settings))
    return "stage transfers on device buffers (CUDA-aware MPI); sums and all-gathers through pinned host buffers "
           "(Open MPI takes no device memory in non-blocking collectives)";
  return std::string("stage transfers, sums and all-gathers through pinned host buffers (") +
         (settings.mpi_cuda_aware == "0" ? "ETH_MPI_CUDA_AWARE=0" : "this MPI is not CUDA-aware") + ")";
}

}  // namespace eth

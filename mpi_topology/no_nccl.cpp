// CPU-only builds: NCCL is never available (its emulation is: emulated_streams.cpp).
#include "mpi_topology/stream_collectives.hpp"

namespace eth {

std::string make_nccl_streams(kernels::Device&, std::unique_ptr<StreamCollectives>*) { return "this build has no CUDA"; }

}  // namespace eth

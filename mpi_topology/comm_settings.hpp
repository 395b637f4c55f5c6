// What the environment says about the job's communication and its ranks' share of the host,
// read once by the program (app/environment.hpp) and handed to what needs it: nothing under
// mpi_topology/ reads the environment. Empty strings are unset variables; each is checked where
// it is used, in one line naming the variable.
#pragma once

#include <string>

namespace eth {

struct CommSettings {
  std::string nccl;             // ETH_NCCL: auto (default), 0, 1 or emulated (sum_reducer.hpp)
  std::string mpi_cuda_aware;   // ETH_MPI_CUDA_AWARE: auto (default), 0 or 1 (wire_buffer.hpp)
  std::string nccl_buffsize;    // NCCL_BUFFSIZE, NCCL's own: bytes per channel buffer (the memory estimate)
  std::string omp_num_threads;  // OMP_NUM_THREADS: set, the ranks keep it (mpi_session.hpp)
};

}  // namespace eth

// This rank and the number of ranks of the job, for the MPI tests.
#pragma once

#include <mpi.h>

#include "mpi_topology/mpi_session.hpp"

namespace eth::test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(world_comm(), &r);
  return r;
}
inline int world_size() {
  int n = 0;
  MPI_Comm_size(world_comm(), &n);
  return n;
}

}  // namespace eth::test

// The few plain MPI operations the runtime needs beside its groups and exchanges, so that no
// other folder calls MPI directly: waiting for requests, world sums of host values, and one
// float array sent to a rank, rank 0's text on every rank.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace eth {

// Waits for every request and clears the list.
void wait_all(std::vector<MPI_Request>& requests);
// Sums `n` doubles over MPI_COMM_WORLD, in place, on every rank.
void world_sum(double* values, int n);
// Blocking point to point of `n` floats over MPI_COMM_WORLD.
void send_floats(const float* data, size_t n, int to, int tag);
void recv_floats(float* data, size_t n, int from, int tag);

}  // namespace eth

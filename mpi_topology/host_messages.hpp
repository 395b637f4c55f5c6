// The few plain MPI operations the runtime needs beside its groups and exchanges, so that no
// other folder calls MPI directly: waiting for requests, world sums of host values, one float
// array sent to a rank, and labelled rows gathered from a group's members.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace eth {

// Waits for every request and clears the list.
void wait_all(std::vector<MPI_Request>& requests);
// Sums `n` doubles over MPI_COMM_WORLD, in place, on every rank.
void world_sum(double* values, int n);
// Blocking point to point of `n` floats over MPI_COMM_WORLD.
void send_floats(const float* data, size_t n, int to, int tag);
void recv_floats(float* data, size_t n, int from, int tag);

// Collective over `comm`: every member contributes `count` rows of `width` floats, each with an
// id; every member receives all of them in member order (rows: (total, width), ids: (total)).
void gather_labelled_rows(MPI_Comm comm, const float* rows, const int32_t* ids, int count, int width,
                          std::vector<float>& all_rows, std::vector<int32_t>& all_ids);

}  // namespace eth

// The few plain MPI operations the runtime needs beside its groups and exchanges, so that no
// other folder calls MPI directly: waiting for requests, world sums of host values, one float
// array sent to a rank, and labelled rows gathered from a group's members. Every wait goes
// through the watchdog (watchdog.hpp), named by `what` as its message will print it.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mpi_topology/watchdog.hpp"
#include "mpi_topology/wire_word.hpp"

namespace eth {

// Waits for every request and clears the list.
void wait_all(std::vector<MPI_Request>& requests, const WaitSite& site);
// Sums `n` doubles over MPI_COMM_WORLD, in place, on every rank.
void world_sum(double* values, int n, const std::string& what);
// Point to point of `n` floats over MPI_COMM_WORLD, returning once complete.
void send_floats(const float* data, size_t n, int to, int tag, const std::string& what);
void recv_floats(float* data, size_t n, int from, int tag, const std::string& what);

// Collective over `comm` (of the world ranks `members`): every member contributes `count` rows
// of `width` words (wire_word.hpp: rows of any element type), each with an id; every member
// receives all of them in member order (rows: (total, width), ids: (total)).
void gather_labelled_rows(MPI_Comm comm, const std::vector<int>& members, const WireWord* rows, const int32_t* ids,
                          int count, int width, std::vector<WireWord>& all_rows, std::vector<int32_t>& all_ids,
                          const std::string& what);

}  // namespace eth

#include "mpi_topology/mpi_counts.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include "mpi_topology/mpi_session.hpp"

namespace eth {
namespace {

size_t count_limit = INT_MAX;

size_t extent_of(MPI_Datatype type) {  // bytes from one element to the next
  MPI_Aint lower = 0, extent = 0;
  MPI_CHECK(MPI_Type_get_extent(type, &lower, &extent));
  return static_cast<size_t>(extent);
}

// Calls post(byte offset, count) for consecutive pieces of [0, n), each at most the limit.
template <class Post>
void for_each_piece(size_t n, MPI_Datatype type, Post post) {
  const size_t extent = extent_of(type), limit = mpi_count_limit();
  for (size_t first = 0; first < n; first += limit) post(first * extent, static_cast<int>(std::min(limit, n - first)));
}

std::vector<size_t> displacements_of(const std::vector<size_t>& counts) {
  std::vector<size_t> displacements(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); i++) displacements[i] = displacements[i - 1] + counts[i - 1];
  return displacements;
}

}  // namespace

size_t mpi_count_limit() { return count_limit; }

MpiCountLimitForTest::MpiCountLimitForTest(size_t limit) : saved_(count_limit) {
  count_limit = std::clamp<size_t>(limit, 1, INT_MAX);
}

MpiCountLimitForTest::~MpiCountLimitForTest() { count_limit = saved_; }

void large_isend(const void* data, size_t n, MPI_Datatype type, int to, int tag, MPI_Comm comm,
                 std::vector<MPI_Request>& requests) {
  for_each_piece(n, type, [&](size_t at, int count) {
    requests.emplace_back();
    MPI_CHECK(MPI_Isend(static_cast<const char*>(data) + at, count, type, to, tag, comm, &requests.back()));
  });
}

void large_irecv(void* data, size_t n, MPI_Datatype type, int from, int tag, MPI_Comm comm,
                 std::vector<MPI_Request>& requests) {
  for_each_piece(n, type, [&](size_t at, int count) {
    requests.emplace_back();
    MPI_CHECK(MPI_Irecv(static_cast<char*>(data) + at, count, type, from, tag, comm, &requests.back()));
  });
}

void large_iallreduce(void* data, size_t n, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                      std::vector<MPI_Request>& requests) {
  for_each_piece(n, type, [&](size_t at, int count) {
    requests.emplace_back();
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(data) + at, count, type, op, comm, &requests.back()));
  });
}

void large_ireduce(void* data, size_t n, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
                   std::vector<MPI_Request>& requests) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  for_each_piece(n, type, [&](size_t at, int count) {
    char* piece = static_cast<char*>(data) + at;
    requests.emplace_back();
    MPI_CHECK(MPI_Ireduce(rank == root ? MPI_IN_PLACE : piece, piece, count, type, op, root, comm, &requests.back()));
  });
}

void large_ibcast(void* data, size_t n, MPI_Datatype type, int root, MPI_Comm comm, std::vector<MPI_Request>& requests) {
  for_each_piece(n, type, [&](size_t at, int count) {
    requests.emplace_back();
    MPI_CHECK(MPI_Ibcast(static_cast<char*>(data) + at, count, type, root, comm, &requests.back()));
  });
}

void large_iallgatherv(void* data, const std::vector<size_t>& counts, MPI_Datatype type, MPI_Comm comm,
                       std::vector<MPI_Request>& requests) {
  const std::vector<size_t> first = displacements_of(counts);
  const size_t extent = extent_of(type);
  for (size_t i = 0; i < counts.size(); i++)
    large_ibcast(static_cast<char*>(data) + first[i] * extent, counts[i], type, static_cast<int>(i), comm, requests);
}

void large_igatherv_to_first(const void* mine, void* all, const std::vector<size_t>& counts, MPI_Datatype type,
                             int tag, MPI_Comm comm, std::vector<MPI_Request>& requests) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  const size_t extent = extent_of(type);
  if (rank != 0) return large_isend(mine, counts[static_cast<size_t>(rank)], type, 0, tag, comm, requests);
  if (counts[0] > 0) std::memcpy(all, mine, counts[0] * extent);
  const std::vector<size_t> first = displacements_of(counts);
  for (size_t i = 1; i < counts.size(); i++)
    large_irecv(static_cast<char*>(all) + first[i] * extent, counts[i], type, static_cast<int>(i), tag, comm, requests);
}

}  // namespace eth

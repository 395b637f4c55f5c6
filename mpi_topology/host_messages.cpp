#include "mpi_topology/host_messages.hpp"

#include <algorithm>
#include <numeric>

#include "mpi_topology/mpi_counts.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth {

void wait_all(std::vector<MPI_Request>& requests, const WaitSite& site) { watched_wait_all(requests, site); }

void world_sum(double* values, int n, const std::string& what) {
  MPI_Request request;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request));
  watched_wait_one(request, {what, {}});
}

void send_floats(const float* data, size_t n, int to, int tag, const std::string& what) {
  std::vector<MPI_Request> requests;
  large_isend(data, n, MPI_FLOAT, to, tag, MPI_COMM_WORLD, requests);
  watched_wait_all(requests, {what, {to}});
}

void recv_floats(float* data, size_t n, int from, int tag, const std::string& what) {
  std::vector<MPI_Request> requests;
  large_irecv(data, n, MPI_FLOAT, from, tag, MPI_COMM_WORLD, requests);
  watched_wait_all(requests, {what, {from}});
}

void gather_labelled_rows(MPI_Comm comm, const std::vector<int>& members, const WireWord* rows, const int32_t* ids,
                          int count, int width, std::vector<WireWord>& all_rows, std::vector<int32_t>& all_ids,
                          const std::string& what) {
  std::vector<int> counts(members.size());
  MPI_Request request;
  MPI_CHECK(MPI_Iallgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm, &request));
  watched_wait_one(request, {what, members});
  // Rows and ids in size_t: the rows of all members (count * width words each) may pass 2^31.
  std::vector<size_t> id_counts(counts.begin(), counts.end()), row_counts;
  for (size_t c : id_counts) row_counts.push_back(c * static_cast<size_t>(width));
  int me = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &me));
  const size_t first = std::accumulate(id_counts.begin(), id_counts.begin() + me, size_t{0});
  all_ids.resize(std::accumulate(id_counts.begin(), id_counts.end(), size_t{0}));
  all_rows.resize(all_ids.size() * static_cast<size_t>(width));
  // The gathers work in place: this member's own part goes there first.
  std::copy(ids, ids + count, all_ids.begin() + static_cast<ptrdiff_t>(first));
  std::copy(rows, rows + row_counts[static_cast<size_t>(me)], all_rows.begin() + static_cast<ptrdiff_t>(first * width));
  std::vector<MPI_Request> requests;
  large_iallgatherv(all_ids.data(), id_counts, MPI_INT32_T, comm, requests);
  large_iallgatherv(all_rows.data(), row_counts, wire_word_type(), comm, requests);
  watched_wait_all(requests, {what, members});
}

}  // namespace eth

#include "mpi_topology/host_messages.hpp"

#include <numeric>

#include "mpi_topology/mpi_session.hpp"

namespace eth {

void wait_all(std::vector<MPI_Request>& requests, const WaitSite& site) { watched_wait_all(requests, site); }

void world_sum(double* values, int n, const std::string& what) {
  MPI_Request request;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request));
  watched_wait_one(request, {what, {}});
}

void send_floats(const float* data, size_t n, int to, int tag, const std::string& what) {
  MPI_Request request;
  MPI_CHECK(MPI_Isend(data, static_cast<int>(n), MPI_FLOAT, to, tag, MPI_COMM_WORLD, &request));
  watched_wait_one(request, {what, {to}});
}

void recv_floats(float* data, size_t n, int from, int tag, const std::string& what) {
  MPI_Request request;
  MPI_CHECK(MPI_Irecv(data, static_cast<int>(n), MPI_FLOAT, from, tag, MPI_COMM_WORLD, &request));
  watched_wait_one(request, {what, {from}});
}

void gather_labelled_rows(MPI_Comm comm, const std::vector<int>& members, const float* rows, const int32_t* ids,
                          int count, int width, std::vector<float>& all_rows, std::vector<int32_t>& all_ids,
                          const std::string& what) {
  const int n = static_cast<int>(members.size());
  std::vector<int> counts(static_cast<size_t>(n)), first(static_cast<size_t>(n));
  MPI_Request request;
  MPI_CHECK(MPI_Iallgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm, &request));
  watched_wait_one(request, {what, members});
  std::exclusive_scan(counts.begin(), counts.end(), first.begin(), 0);
  const int total = first.back() + counts.back();
  all_ids.resize(static_cast<size_t>(total));
  MPI_CHECK(MPI_Iallgatherv(ids, count, MPI_INT32_T, all_ids.data(), counts.data(), first.data(), MPI_INT32_T, comm,
                            &request));
  watched_wait_one(request, {what, members});
  for (int m = 0; m < n; m++) {  // now in floats
    counts[m] *= width;
    first[m] *= width;
  }
  all_rows.resize(static_cast<size_t>(total) * width);
  MPI_CHECK(MPI_Iallgatherv(rows, count * width, MPI_FLOAT, all_rows.data(), counts.data(), first.data(), MPI_FLOAT,
                            comm, &request));
  watched_wait_one(request, {what, members});
}

}  // namespace eth

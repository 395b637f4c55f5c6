#include "mpi_topology/host_messages.hpp"

#include <numeric>

#include "mpi_topology/mpi_session.hpp"

namespace eth {

void wait_all(std::vector<MPI_Request>& requests) {
  MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  requests.clear();
}

void world_sum(double* values, int n) {
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
}

void send_floats(const float* data, size_t n, int to, int tag) {
  MPI_CHECK(MPI_Send(data, static_cast<int>(n), MPI_FLOAT, to, tag, MPI_COMM_WORLD));
}

void recv_floats(float* data, size_t n, int from, int tag) {
  MPI_CHECK(MPI_Recv(data, static_cast<int>(n), MPI_FLOAT, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

void gather_labelled_rows(MPI_Comm comm, const float* rows, const int32_t* ids, int count, int width,
                          std::vector<float>& all_rows, std::vector<int32_t>& all_ids) {
  int members = 0;
  MPI_CHECK(MPI_Comm_size(comm, &members));
  std::vector<int> counts(static_cast<size_t>(members)), first(static_cast<size_t>(members));
  MPI_CHECK(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm));
  std::exclusive_scan(counts.begin(), counts.end(), first.begin(), 0);
  const int total = first.back() + counts.back();
  all_ids.resize(static_cast<size_t>(total));
  MPI_CHECK(MPI_Allgatherv(ids, count, MPI_INT32_T, all_ids.data(), counts.data(), first.data(), MPI_INT32_T, comm));
  for (int m = 0; m < members; m++) {  // now in floats
    counts[m] *= width;
    first[m] *= width;
  }
  all_rows.resize(static_cast<size_t>(total) * width);
  MPI_CHECK(MPI_Allgatherv(rows, count * width, MPI_FLOAT, all_rows.data(), counts.data(), first.data(), MPI_FLOAT,
                           comm));
}

}  // namespace eth

#include "mpi_topology/host_messages.hpp"

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

}  // namespace eth

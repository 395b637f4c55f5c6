#include "mpi_topology/host_messages.hpp"

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

}  // namespace eth

#include "mpi_topology/mpi_session.hpp"

#include <cstdio>

namespace eth {

void mpi_check(int code, const char* call, const char* file, int line) {
  if (code == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, message, &length);
  std::fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, call, message);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

MpiSession::MpiSession(int* argc, char*** argv) {
  MPI_CHECK(MPI_Init(argc, argv));
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
}

MpiSession::~MpiSession() { MPI_Finalize(); }

}  // namespace eth

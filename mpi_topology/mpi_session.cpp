#include "mpi_topology/mpi_session.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

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
  // Open MPI's non-blocking all-reduce (coll/libnbc) takes a binomial reduce and broadcast for an
  // in-place sum, whatever the size: the root's link then carries 2(k-1)·S for k ranks instead
  // of a ring's 2(k-1)/k·S. Across emulated nodes at 1 Gbit/s that was 1.5x the bytes and 2.4x
  // the wait of the ring (docs/results.md, "across emulated nodes"). The ring moves the
  // bandwidth-optimal bytes for any group size; the environment or mpirun --mca still decide.
  setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
  MPI_CHECK(MPI_Init(argc, argv));
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  MPI_Comm local;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  MPI_CHECK(MPI_Comm_size(local, &local_ranks_));
  MPI_CHECK(MPI_Comm_rank(local, &local_rank_));
  MPI_CHECK(MPI_Comm_free(&local));
  char name[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  MPI_CHECK(MPI_Get_processor_name(name, &length));
  host_.assign(name, static_cast<size_t>(length));
}

std::string agreed_error(const std::string& mine) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  int first_failed = mine.empty() ? INT32_MAX : rank;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (first_failed == INT32_MAX) return "";
  int length = static_cast<int>(mine.size());
  MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, first_failed, MPI_COMM_WORLD));
  std::string message = mine;
  message.resize(static_cast<size_t>(length));
  MPI_CHECK(MPI_Bcast(message.data(), length, MPI_CHAR, first_failed, MPI_COMM_WORLD));
  return message;
}

void MpiSession::share_cores_among_local_ranks() const {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  omp_set_num_threads(std::max(1, cores / local_ranks_));
}

MpiSession::~MpiSession() { MPI_Finalize(); }

}  // namespace eth

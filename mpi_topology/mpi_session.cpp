#include "mpi_topology/mpi_session.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <thread>
#include <vector>

#include "mpi_topology/sum_reducer.hpp"
#include "mpi_topology/watchdog.hpp"

namespace eth {

void mpi_check(int code, const char* call, const char* file, int line) {
  if (code == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, message, &length);
  std::fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, call, message);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

MpiSession::MpiSession(int* argc, char*** argv, const CommSettings& settings)
    : omp_threads_set_(!settings.omp_num_threads.empty()) {
  // Open MPI's non-blocking collectives (coll/libnbc) choose badly for gradient sums; the
  // environment or mpirun --mca still decide (docs/results.md, "across emulated nodes"):
  // - an in-place all-reduce takes a binomial reduce and broadcast whatever its size: the root's
  //   link carries 2(k-1)·S for k ranks instead of a ring's 2(k-1)/k·S (across emulated nodes at
  //   1 Gbit/s, 1.5x the bytes and more than twice the wait). The ring (1) moves the least.
  // - a reduce over at most 4 ranks of 64 KiB or more takes a segmented chain that ran a 26 MB
  //   node-local sum of two ranks in 0.1-1.7 s; the binomial tree (2) took 10-25 ms.
  setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
  setenv("OMPI_MCA_coll_libnbc_ireduce_algorithm", "2", /*overwrite=*/0);
  // The emulated NCCL streams make MPI calls from threads of their own (stream_collectives.hpp);
  // everything else calls MPI from the main thread only.
  int provided = 0;
  const bool threads = nccl_emulation_requested(settings);
  MPI_CHECK(MPI_Init_thread(argc, argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided));
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  const HostPlace place = host_place();
  local_rank_ = place.local_rank;
  local_ranks_ = place.local_ranks;
  char name[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  MPI_CHECK(MPI_Get_processor_name(name, &length));
  host_.assign(name, static_cast<size_t>(length));
}

std::string agreed_error(const std::string& mine) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  int first_failed = mine.empty() ? INT32_MAX : rank;
  MPI_Request request;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, &first_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &request));
  watched_wait_one(request, {"the agreement on errors", {}});
  if (first_failed == INT32_MAX) return "";
  return broadcast_text(mine, first_failed);
}

std::string broadcast_text(std::string text, int root) {
  const WaitSite site{"a broadcast from rank " + std::to_string(root), {root}};
  int length = static_cast<int>(text.size());
  MPI_Request request;
  MPI_CHECK(MPI_Ibcast(&length, 1, MPI_INT, root, MPI_COMM_WORLD, &request));
  watched_wait_one(request, site);
  text.resize(static_cast<size_t>(length));
  MPI_CHECK(MPI_Ibcast(text.data(), length, MPI_CHAR, root, MPI_COMM_WORLD, &request));
  watched_wait_one(request, site);
  return text;
}

std::string gather_text(const std::string& mine) {
  int world = 1;
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world));
  std::vector<int> lengths(static_cast<size_t>(world)), offsets(static_cast<size_t>(world), 0);
  int length = static_cast<int>(mine.size());
  MPI_Request request;
  MPI_CHECK(MPI_Iallgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD, &request));
  watched_wait_one(request, {"a gather of text", {}});
  std::exclusive_scan(lengths.begin(), lengths.end(), offsets.begin(), 0);
  std::string all(static_cast<size_t>(offsets.back() + lengths.back()), '\0');
  MPI_CHECK(MPI_Iallgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                            MPI_COMM_WORLD, &request));
  watched_wait_one(request, {"a gather of text", {}});
  return all;
}

void MpiSession::share_cores_among_local_ranks() const {
  if (omp_threads_set_) return;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  omp_set_num_threads(std::max(1, cores / local_ranks_));
}

MpiSession::~MpiSession() { MPI_Finalize(); }

HostPlace host_place() {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_Comm local;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local));
  HostPlace place;
  MPI_CHECK(MPI_Comm_rank(local, &place.local_rank));
  MPI_CHECK(MPI_Comm_size(local, &place.local_ranks));
  MPI_CHECK(MPI_Comm_free(&local));
  return place;
}

}  // namespace eth

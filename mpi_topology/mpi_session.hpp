// The MPI environment of one process: initialised on construction, finalised on destruction,
// and the one checking macro every MPI call goes through.
#pragma once

#include <mpi.h>

#include <string>

#include "mpi_topology/comm_settings.hpp"

namespace eth {

// Aborts the job with the failing call's file, line and MPI's message: an MPI error is never a
// user's mistake, and a rank that returned alone would leave the others hanging.
#define MPI_CHECK(call) ::eth::mpi_check((call), #call, __FILE__, __LINE__)
void mpi_check(int code, const char* call, const char* file, int line);

// Every rank of the job. The rest of the code names the world through this alone, so that what
// "the job" is stays decided here (scripts/check_layers.sh refuses MPI_COMM_WORLD elsewhere).
inline MPI_Comm world_comm() { return MPI_COMM_WORLD; }

// Collective over MPI_COMM_WORLD: "" when `mine` is "" on every rank, else the message of the
// lowest rank whose `mine` is not "", on every rank. Lets a mistake one rank found end every
// rank together, with one message and no hang.
std::string agreed_error(const std::string& mine);

// Collective over MPI_COMM_WORLD: rank `root`'s `text` on every rank.
std::string broadcast_text(std::string text, int root = 0);
// Collective over MPI_COMM_WORLD: every rank's `mine`, in rank order, concatenated, on every rank.
std::string gather_text(const std::string& mine);

// This rank's place among the job's ranks on its host (MPI_COMM_TYPE_SHARED). Collective.
struct HostPlace {
  int local_rank = 0;   // this rank's place among them
  int local_ranks = 1;  // ranks of this job on this host
};
HostPlace host_place();

class MpiSession {
 public:
  // MPI_THREAD_MULTIPLE where `settings` ask for the emulated NCCL (its streams call MPI from
  // threads of their own), else MPI_THREAD_SINGLE.
  MpiSession(int* argc, char*** argv, const CommSettings& settings);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_ranks() const { return local_ranks_; }  // ranks of this job on this host
  int local_rank() const { return local_rank_; }    // this rank's place among them
  const std::string& host() const { return host_; }

  // Unless OMP_NUM_THREADS says otherwise, gives each rank its share of the host's cores:
  // ranks' OpenMP pools spinning against each other on shared cores cost far more than idle ones.
  void share_cores_among_local_ranks() const;

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_ranks_ = 1;
  int local_rank_ = 0;
  std::string host_;
  bool omp_threads_set_;  // OMP_NUM_THREADS was set
};

}  // namespace eth

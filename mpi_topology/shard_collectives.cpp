#include "mpi_topology/shard_collectives.hpp"

#include <cassert>

#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/watchdog.hpp"

namespace eth {
namespace {

std::vector<int> displacements_of(const std::vector<int>& counts) {
  std::vector<int> displacements(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); i++) displacements[i] = displacements[i - 1] + counts[i - 1];
  return displacements;
}

}  // namespace

PendingShards PendingShards::prepared(const ProcessGroup& group, const std::vector<int>& counts, size_t requests) {
  assert(group.is_member() && counts.size() == static_cast<size_t>(group.size()));
  PendingShards p;
  p.group_ = &group;
  p.counts_ = counts;
  p.displacements_ = displacements_of(counts);
  p.requests_.assign(requests, MPI_REQUEST_NULL);
  return p;
}

PendingShards PendingShards::reduce_to_owners(const ProcessGroup& group, float* data, const std::vector<int>& counts) {
  PendingShards p = prepared(group, counts, counts.size());
  // Every member posts the k reductions in member order (MPI's rule for one communicator).
  for (int i = 0; i < group.size(); i++) {
    float* shard = data + p.displacements_[i];
    MPI_CHECK(MPI_Ireduce(i == group.rank() ? MPI_IN_PLACE : shard, shard, p.counts_[i], MPI_FLOAT, MPI_SUM, i,
                          group.comm(), &p.requests_[i]));
  }
  return p;
}

PendingShards PendingShards::all_gather(const ProcessGroup& group, float* data, const std::vector<int>& counts) {
  PendingShards p = prepared(group, counts, 1);
  MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, p.counts_.data(), p.displacements_.data(),
                            MPI_FLOAT, group.comm(), &p.requests_[0]));
  return p;
}

PendingShards PendingShards::gather_to_first(const ProcessGroup& group, const float* mine, float* all,
                                             const std::vector<int>& counts) {
  PendingShards p = prepared(group, counts, 1);
  MPI_CHECK(MPI_Igatherv(mine, p.counts_[group.rank()], MPI_FLOAT, all, p.counts_.data(), p.displacements_.data(),
                         MPI_FLOAT, 0, group.comm(), &p.requests_[0]));
  return p;
}

bool PendingShards::test() {
  if (requests_.empty()) return true;
  int complete = 0;
  MPI_CHECK(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &complete, MPI_STATUSES_IGNORE));
  if (complete) requests_.clear();
  return complete != 0;
}

void PendingShards::wait(const std::string& what) {
  if (requests_.empty()) return;
  watched_wait_all(requests_, {what, group_->members()});
}

}  // namespace eth

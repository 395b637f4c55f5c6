#include "mpi_topology/shard_collectives.hpp"

#include <cassert>

#include "mpi_topology/mpi_counts.hpp"
#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/watchdog.hpp"

namespace eth {
namespace {

// The point-to-point messages of gather_to_first on the group's communicator, which carries no
// other; gathers in flight together match in the order every member posts them.
constexpr int kGatherTag = 1;

}  // namespace

PendingShards::PendingShards(const ProcessGroup& group, [[maybe_unused]] const std::vector<size_t>& counts)
    : group_(&group) {
  assert(group.is_member() && counts.size() == static_cast<size_t>(group.size()));
}

PendingShards PendingShards::reduce_to_owners(const ProcessGroup& group, float* data,
                                              const std::vector<size_t>& counts) {
  PendingShards p(group, counts);
  // Every member posts the reductions in member order (MPI's rule for one communicator).
  for (size_t i = 0, first = 0; i < counts.size(); first += counts[i++])
    large_ireduce(data + first, counts[i], MPI_FLOAT, MPI_SUM, static_cast<int>(i), group.comm(), p.requests_);
  return p;
}

PendingShards PendingShards::all_gather(const ProcessGroup& group, float* data, const std::vector<size_t>& counts) {
  PendingShards p(group, counts);
  large_iallgatherv(data, counts, MPI_FLOAT, group.comm(), p.requests_);
  return p;
}

PendingShards PendingShards::gather_to_first(const ProcessGroup& group, const float* mine, float* all,
                                             const std::vector<size_t>& counts) {
  PendingShards p(group, counts);
  large_igatherv_to_first(mine, all, counts, MPI_FLOAT, kGatherTag, group.comm(), p.requests_);
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

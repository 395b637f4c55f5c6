// The two collectives of sharded optimizer state (lib/plan/optimizer_shards.hpp) over a process
// group: a slice cut into one shard per member (member i's shard is `counts[i]` floats, the
// shards in member order), its sum delivered to each shard's member only, and the members'
// updated shards gathered back to everyone.
//
// A first version: flat collectives on the group's communicator (reductions rooted at each
// shard's member, a broadcast from each member), not the node-then-leaders hierarchy of
// PendingReduce. Both work in place: no buffer beyond the slice itself. Any count: shards and
// slices past MPI's int go in pieces (mpi_counts.hpp).
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "mpi_topology/process_group.hpp"

namespace eth {

class PendingShards {
 public:
  PendingShards() = default;
  PendingShards(PendingShards&&) = default;
  PendingShards& operator=(PendingShards&&) = default;

  // Starts the sum of data[0, sum(counts)) over `group`: afterwards member i's own shard holds
  // the sum (the rest of its slice is left as MPI leaves it). Members only.
  static PendingShards reduce_to_owners(const ProcessGroup& group, float* data, const std::vector<size_t>& counts);
  // Starts the all-gather: every member's shard of data is copied to every other member.
  static PendingShards all_gather(const ProcessGroup& group, float* data, const std::vector<size_t>& counts);

  // Starts the gather of every member's shard (`mine`, counts[rank] floats) into `all`
  // (sum(counts) floats, the first member only; ignored elsewhere): checkpoints.
  static PendingShards gather_to_first(const ProcessGroup& group, const float* mine, float* all,
                                       const std::vector<size_t>& counts);

  bool test();  // never blocks; true once complete
  void wait(const std::string& what);  // through the watchdog

 private:
  explicit PendingShards(const ProcessGroup& group, const std::vector<size_t>& counts);

  const ProcessGroup* group_ = nullptr;
  std::vector<MPI_Request> requests_;
};

}  // namespace eth

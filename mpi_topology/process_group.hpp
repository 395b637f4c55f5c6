// A set of world ranks that communicates as one, and the sum-reduction the runtime runs on it.
//
// The reduction is hierarchical so that a slow inter-node link carries each byte once: reduce
// to one leader per node over the node-local communicator, all-reduce among the leaders, then
// broadcast back inside each node. "Node" is whatever node_of_rank says: the topology's node
// list, which lets a test declare several nodes on one host.
#pragma once

#include <mpi.h>

#include <cassert>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace eth {

class ProcessGroup;

// A hierarchical sum in flight, pipelined in chunks: every chunk's node-local reduce to the
// leader is posted at once; a chunk's all-reduce among leaders starts when its reduce completes,
// its node-local broadcast when its all-reduce completes, so the network carries chunk c while
// the node reduces chunk c + 1 and broadcasts chunk c - 1, and several leader all-reduces keep
// the link busy while one of them adds. Each phase starts its chunks in chunk order on every
// rank (MPI's rule for collectives on one communicator). MPI progresses only inside MPI calls,
// so the owner calls test() between pieces of other work (the runtime does, between layers of
// backward) and wait() at the end.
class PendingReduce {
 public:
  PendingReduce() = default;
  PendingReduce(const ProcessGroup* group, float* data, size_t n, size_t chunk);
  PendingReduce(PendingReduce&& other) noexcept { *this = std::move(other); }
  PendingReduce& operator=(PendingReduce&& other) noexcept;  // the moved-from one is done
  PendingReduce(const PendingReduce&) = delete;
  PendingReduce& operator=(const PendingReduce&) = delete;

  bool test();  // advances as far as it can without blocking; true once the sum is complete
  // Polls test() through the watchdog (watchdog.hpp), which names the sum by `what`.
  void wait(const std::string& what = "a sum over a process group");

 private:
  // Phases of a chunk: node reduce, leader all-reduce (leaders only), node broadcast. A group on
  // one node has only the middle one, over all its members.
  enum Phase { node_reduce, leader_allreduce, node_bcast, phases };
  void start(Phase phase, size_t c);
  bool advance();  // starts what completed phases allow; true when it started anything

  const ProcessGroup* group_ = nullptr;
  float* data_ = nullptr;
  size_t n_ = 0, chunk_ = 0, chunks_ = 0;
  bool done_ = true;
  size_t started_[phases] = {};                // chunks whose phase has been started, in order
  std::vector<MPI_Request> requests_[phases];  // per chunk
};

class ProcessGroup {
 public:
  ProcessGroup() = default;  // a group this rank is not a member of
  ~ProcessGroup();
  ProcessGroup(ProcessGroup&& other) noexcept;
  ProcessGroup& operator=(ProcessGroup&& other) noexcept;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  // Collective over `members` (world ranks, ascending) only: every member calls it, in the same
  // order of groups on every rank (a global order makes overlapping creations deadlock-free);
  // non-members get an empty group without calling. `tag` distinguishes concurrent creations.
  static ProcessGroup create(const std::vector<int>& members, const std::vector<int>& node_of_rank, int tag);

  bool is_member() const { return comm_ != MPI_COMM_NULL; }
  const std::vector<int>& members() const { return members_; }
  int size() const { return static_cast<int>(members_.size()); }
  int rank() const { return rank_; }          // index of this rank among the members
  MPI_Comm comm() const { return comm_; }
  int nodes() const { return nodes_; }        // distinct nodes among the members
  MPI_Comm node_comm() const { return node_comm_; }      // members on this rank's node
  MPI_Comm leader_comm() const { return leader_comm_; }  // node leaders; null on non-leaders

  // Sums `data` over the members, in place, hierarchically, in chunks of `chunk` floats.
  // Members only. `data` must stay untouched until the returned reduction completes.
  static constexpr size_t kChunk = size_t{1} << 19;  // 2 MiB: docs/results.md, "across emulated nodes"
  PendingReduce start_allreduce_sum(float* data, size_t n, size_t chunk = kChunk) const {
    return PendingReduce(this, data, n, chunk);
  }

 private:
  friend class PendingReduce;
  void reset();

  std::vector<int> members_;
  int rank_ = -1;
  int nodes_ = 0;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;     // members on this rank's node
  MPI_Comm leader_comm_ = MPI_COMM_NULL;   // node leaders; null on non-leaders
};

}  // namespace eth

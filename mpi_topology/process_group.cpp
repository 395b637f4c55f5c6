#include "mpi_topology/process_group.hpp"

#include <algorithm>
#include <cassert>
#include <climits>
#include <set>
#include <utility>

#include "mpi_topology/mpi_session.hpp"

namespace eth {
namespace {

void free_comm(MPI_Comm& c) {
  if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  c = MPI_COMM_NULL;
}

// MPI counts are int: large buffers go in chunks.
constexpr size_t kMaxChunk = static_cast<size_t>(INT_MAX) / 2;

}  // namespace

ProcessGroup::~ProcessGroup() { reset(); }

ProcessGroup::ProcessGroup(ProcessGroup&& other) noexcept { *this = std::move(other); }

ProcessGroup& ProcessGroup::operator=(ProcessGroup&& other) noexcept {
  if (this != &other) {
    reset();
    members_ = std::move(other.members_);
    rank_ = std::exchange(other.rank_, -1);
    nodes_ = std::exchange(other.nodes_, 0);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    node_comm_ = std::exchange(other.node_comm_, MPI_COMM_NULL);
    leader_comm_ = std::exchange(other.leader_comm_, MPI_COMM_NULL);
  }
  return *this;
}

void ProcessGroup::reset() {
  free_comm(leader_comm_);
  free_comm(node_comm_);
  free_comm(comm_);
  members_.clear();
  rank_ = -1;
  nodes_ = 0;
}

ProcessGroup ProcessGroup::create(const std::vector<int>& members, const std::vector<int>& node_of_rank, int tag) {
  assert(std::is_sorted(members.begin(), members.end()));
  int world_rank = 0;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  ProcessGroup g;
  const auto me = std::find(members.begin(), members.end(), world_rank);
  if (me == members.end()) return g;

  MPI_Group world_group, group;
  MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
  MPI_CHECK(MPI_Group_incl(world_group, static_cast<int>(members.size()), members.data(), &group));
  MPI_CHECK(MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, &g.comm_));
  MPI_CHECK(MPI_Group_free(&group));
  MPI_CHECK(MPI_Group_free(&world_group));

  g.members_ = members;
  g.rank_ = static_cast<int>(me - members.begin());
  std::set<int> nodes;
  for (int r : members) nodes.insert(node_of_rank[r]);
  g.nodes_ = static_cast<int>(nodes.size());
  // Ranks of a node keep their order, so the leader is the node's lowest member.
  MPI_CHECK(MPI_Comm_split(g.comm_, node_of_rank[world_rank], g.rank_, &g.node_comm_));
  int node_rank = 0;
  MPI_CHECK(MPI_Comm_rank(g.node_comm_, &node_rank));
  MPI_CHECK(MPI_Comm_split(g.comm_, node_rank == 0 ? 0 : MPI_UNDEFINED, g.rank_, &g.leader_comm_));
  return g;
}

PendingReduce::PendingReduce(const ProcessGroup* group, float* data, size_t n)
    : group_(group), data_(data), n_(n), done_(group->size() == 1 || n == 0) {
  assert(group->is_member());
  // One node has no hierarchy to exploit: the "leader all-reduce" over the whole group does it.
  phase_ = group->nodes_ == 1 ? 1 : 0;
  if (!done_) start_phase();
}

PendingReduce& PendingReduce::operator=(PendingReduce&& other) noexcept {
  assert(done_);  // never drop a reduction in flight
  group_ = other.group_;
  data_ = other.data_;
  n_ = other.n_;
  chunk_ = other.chunk_;
  phase_ = other.phase_;
  done_ = std::exchange(other.done_, true);
  request_ = std::exchange(other.request_, MPI_REQUEST_NULL);
  return *this;
}

void PendingReduce::start_phase() {
  const ProcessGroup& g = *group_;
  float* chunk = data_ + chunk_;
  const int count = static_cast<int>(std::min(kMaxChunk, n_ - chunk_));
  const bool leader = g.leader_comm_ != MPI_COMM_NULL;
  switch (phase_) {
    case 0:
      MPI_CHECK(MPI_Ireduce(leader ? MPI_IN_PLACE : chunk, leader ? chunk : nullptr, count, MPI_FLOAT, MPI_SUM, 0,
                            g.node_comm_, &request_));
      break;
    case 1:
      if (g.nodes_ == 1) {
        MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, chunk, count, MPI_FLOAT, MPI_SUM, g.comm_, &request_));
      } else if (leader) {
        MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, chunk, count, MPI_FLOAT, MPI_SUM, g.leader_comm_, &request_));
      } else {
        request_ = MPI_REQUEST_NULL;  // nothing to do until the leader broadcasts
      }
      break;
    case 2:
      MPI_CHECK(MPI_Ibcast(chunk, count, MPI_FLOAT, 0, g.node_comm_, &request_));
      break;
  }
}

bool PendingReduce::test() {
  while (!done_) {
    int complete = 0;
    MPI_CHECK(MPI_Test(&request_, &complete, MPI_STATUS_IGNORE));
    if (!complete) return false;
    const bool last_phase = phase_ == 2 || (phase_ == 1 && group_->nodes_ == 1);
    if (!last_phase) {
      phase_++;
    } else {
      chunk_ += kMaxChunk;
      if (chunk_ >= n_) {
        done_ = true;
        break;
      }
      phase_ = group_->nodes_ == 1 ? 1 : 0;
    }
    start_phase();
  }
  return true;
}

void PendingReduce::wait() {
  while (!done_) {
    MPI_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE));
    test();
  }
}

}  // namespace eth

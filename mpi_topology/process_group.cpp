#include "mpi_topology/process_group.hpp"

#include <algorithm>
#include <cassert>
#include <climits>
#include <set>
#include <utility>

#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/watchdog.hpp"

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

PendingReduce::PendingReduce(const ProcessGroup* group, float* data, size_t n, size_t chunk)
    : group_(group), data_(data), n_(n), chunk_(std::min(chunk, kMaxChunk)), done_(group->size() == 1 || n == 0) {
  assert(group->is_member() && chunk > 0);
  if (done_) return;
  chunks_ = (n + chunk_ - 1) / chunk_;
  for (auto& r : requests_) r.assign(chunks_, MPI_REQUEST_NULL);
  // One node has no hierarchy to exploit: the "leader all-reduce" over the whole group does it.
  const Phase first = group->nodes_ == 1 ? leader_allreduce : node_reduce;
  for (size_t c = 0; c < chunks_; c++) start(first, c);
  if (first == leader_allreduce) started_[node_reduce] = started_[node_bcast] = chunks_;
}

PendingReduce& PendingReduce::operator=(PendingReduce&& other) noexcept {
  assert(done_);  // never drop a reduction in flight
  group_ = other.group_;
  data_ = other.data_;
  n_ = other.n_;
  chunk_ = other.chunk_;
  chunks_ = other.chunks_;
  done_ = std::exchange(other.done_, true);
  for (int p = 0; p < phases; p++) {
    started_[p] = other.started_[p];
    requests_[p] = std::move(other.requests_[p]);
  }
  return *this;
}

void PendingReduce::start(Phase phase, size_t c) {
  const ProcessGroup& g = *group_;
  float* chunk = data_ + c * chunk_;
  const int count = static_cast<int>(std::min(chunk_, n_ - c * chunk_));
  const bool leader = g.leader_comm_ != MPI_COMM_NULL;
  MPI_Request& request = requests_[phase][c];
  switch (phase) {
    case node_reduce:
      MPI_CHECK(MPI_Ireduce(leader ? MPI_IN_PLACE : chunk, leader ? chunk : nullptr, count, MPI_FLOAT, MPI_SUM, 0,
                            g.node_comm_, &request));
      break;
    case leader_allreduce:
      if (g.nodes_ == 1) {
        MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, chunk, count, MPI_FLOAT, MPI_SUM, g.comm_, &request));
      } else if (leader) {
        MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, chunk, count, MPI_FLOAT, MPI_SUM, g.leader_comm_, &request));
      }  // else nothing to do until the leader broadcasts: the request stays null, complete
      break;
    case node_bcast:
      MPI_CHECK(MPI_Ibcast(chunk, count, MPI_FLOAT, 0, g.node_comm_, &request));
      break;
    case phases:
      break;
  }
  started_[phase] = c + 1;
}

bool PendingReduce::advance() {
  bool any = false;
  for (int p = leader_allreduce; p < phases; p++) {
    const Phase phase = static_cast<Phase>(p);
    for (size_t& c = started_[phase]; c < started_[phase - 1];) {
      int complete = 0;
      MPI_CHECK(MPI_Test(&requests_[phase - 1][c], &complete, MPI_STATUS_IGNORE));
      if (!complete) break;
      start(phase, c);
      any = true;
    }
  }
  return any;
}

bool PendingReduce::test() {
  if (done_) return true;
  while (advance()) {
  }
  if (started_[node_bcast] < chunks_) return false;
  // The last phase of every chunk: broadcasts, or a one-node group's all-reduces.
  std::vector<MPI_Request>& last = requests_[group_->nodes_ == 1 ? leader_allreduce : node_bcast];
  int complete = 0;
  MPI_CHECK(MPI_Testall(static_cast<int>(chunks_), last.data(), &complete, MPI_STATUSES_IGNORE));
  done_ = complete != 0;
  return done_;
}

void PendingReduce::wait(const std::string& what) {
  if (done_) return;
  // test() starts each phase as soon as the one before it completes: polling it is as prompt as
  // blocking on the oldest request, and lets the watchdog see a member that never arrives.
  watched_wait([this] { return test(); }, {what, group_->members()});
}

}  // namespace eth

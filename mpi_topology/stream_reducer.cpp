// The NCCL path of SumReducer, on StreamCollectives (NCCL itself, or its emulation on the CPU):
// per process group, two communicators over the group's members on this node, one for reduces
// and one for broadcasts, each issued on a stream of its own, so that a node leader can
// broadcast slice i after its MPI phase while the reduce of slice i + 1 is already queued, and
// every rank still issues each stream's operations in one global order. Across nodes the
// leaders sum a pinned mirror with MPI.
//
// finish() waits on the host for every slice, in the order this rank started them (what its
// streams wait in first), through the watchdog, polling the collectives' asynchronous errors: a
// peer that never comes, or fails, ends the job with one line naming the reduction, the group
// and this rank, and the communicators are aborted; nothing hangs in a stream wait the
// watchdog cannot see.
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kernels/device_buffer.hpp"
#include "mpi_topology/mpi_counts.hpp"
#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/stream_collectives.hpp"
#include "mpi_topology/sum_reducer.hpp"
#include "mpi_topology/watchdog.hpp"

namespace eth {
namespace {

using Stream = StreamCollectives::Stream;
constexpr Stream kCompute = StreamCollectives::kCompute;

std::string members_text(const std::vector<int>& members) {
  std::string text;
  for (int r : members) text += (text.empty() ? "" : ",") + std::to_string(r);
  return "{" + text + "}";
}

class StreamReducer final : public SumReducer {
 public:
  StreamReducer(kernels::Device& device, std::unique_ptr<StreamCollectives> streams)
      : device_(device),
        streams_(std::move(streams)),
        reduce_stream_(streams_->new_stream()),
        broadcast_stream_(streams_->new_stream()),
        abort_on_expiry_([s = streams_.get()] { s->abort(); }) {}

  int add_slice(const ProcessGroup& group, float* data, size_t n, const std::string& what) override {
    sites_.push_back({what, group.members()});
    Slice s{&group, data, n, {}, nullptr, nullptr, nullptr, nullptr, State::idle, {}};
    // A slice of this rank alone is already its sum: no communicator, nothing to start.
    if (group.size() > 1) {
      if (!comms_.count(&group))
        comms_[&group] = {streams_->new_communicator(group.node_comm()), streams_->new_communicator(group.node_comm())};
      for (StreamCollectives::Event** e : {&s.final, &s.reduced, &s.staged, &s.done}) *e = streams_->new_event();
      if (group.nodes() > 1 && group.leader_comm() != MPI_COMM_NULL)
        s.mirror = kernels::DeviceBuffer<float>(device_, n, kernels::Memory::pinned);
    }
    slices_.push_back(std::move(s));
    return static_cast<int>(slices_.size()) - 1;
  }

  // The trainer gives jobs with sharded optimizer state the MPI reducer (docs/design.md).
  int add_owner_slice(const ProcessGroup&, float*, const std::vector<size_t>&, const std::string&) override {
    throw std::logic_error("the NCCL path sums whole slices only; sharded optimizer state takes the MPI reducer");
  }

  void start(int index) override {
    Slice& s = slices_[static_cast<size_t>(index)];
    if (s.group->size() == 1) return;
    started_.push_back(static_cast<size_t>(index));
    const Comms& c = comms_.at(s.group);
    streams_->record(s.final, kCompute);
    streams_->wait(reduce_stream_, s.final);
    if (s.group->nodes() == 1) {  // all members on this node: one all-reduce does it
      streams_->all_reduce(s.data, s.n, c.reduce, reduce_stream_);
      streams_->record(s.done, reduce_stream_);
      s.state = State::broadcast;
      return;
    }
    streams_->reduce(s.data, s.n, 0, c.reduce, reduce_stream_);
    streams_->record(s.reduced, reduce_stream_);
    if (s.mirror.data() != nullptr) {
      streams_->copy(s.mirror.data(), s.data, s.n * sizeof(float), reduce_stream_);
      streams_->record(s.staged, reduce_stream_);
      s.state = State::staging;
    } else {
      s.state = State::ready_to_broadcast;  // a non-leader receives the node's result
    }
    poll();
  }

  void poll() override {
    for (Slice& s : slices_) {
      if (s.state == State::staging && streams_->done(s.staged)) {
        large_iallreduce(s.mirror.data(), s.n, MPI_FLOAT, MPI_SUM, s.group->leader_comm(), s.requests);
        s.state = State::summing;
      }
      if (s.state == State::summing) {
        int complete = 0;
        MPI_CHECK(MPI_Testall(static_cast<int>(s.requests.size()), s.requests.data(), &complete, MPI_STATUSES_IGNORE));
        if (complete) {
          s.requests.clear();
          s.state = State::ready_to_broadcast;
        }
      }
    }
    // Broadcasts go onto their stream strictly in slice order, as on every other rank.
    for (; next_broadcast_ < slices_.size(); next_broadcast_++) {
      Slice& s = slices_[next_broadcast_];
      if (s.group->size() == 1 || s.state == State::broadcast) continue;  // alone, or summed by one all-reduce
      if (s.state != State::ready_to_broadcast) break;
      streams_->wait(broadcast_stream_, s.reduced);
      if (s.mirror.data() != nullptr) streams_->copy(s.data, s.mirror.data(), s.n * sizeof(float), broadcast_stream_);
      streams_->broadcast(s.data, s.n, 0, comms_.at(s.group).broadcast, broadcast_stream_);
      streams_->record(s.done, broadcast_stream_);
      s.state = State::broadcast;
    }
  }

  void finish() override {
    for (size_t i : started_) {
      Slice& s = slices_[i];
      watched_wait([&] {
        check_async_error(i);
        poll();
        if (s.state == State::broadcast && streams_->done(s.done)) return true;
        std::this_thread::yield();  // the collectives' own threads, where they are emulated, need the core
        return false;
      }, sites_[i]);
    }
    for (Slice& s : slices_) {
      if (s.group->size() == 1) continue;
      streams_->wait(kCompute, s.done);  // work enqueued from now on sees the sums
      s.state = State::idle;
    }
    started_.clear();
    next_broadcast_ = 0;
  }

  std::string path() const override {
    return streams_->name() + " inside each node, MPI among node leaders through pinned host buffers";
  }

 private:
  // idle -> (staging -> summing ->) ready_to_broadcast -> broadcast: the sum's last operation is
  // issued and `done` recorded after it. Single-node groups go from idle to broadcast at once.
  enum class State { idle, staging, summing, ready_to_broadcast, broadcast };
  struct Comms {
    StreamCollectives::Communicator *reduce = nullptr, *broadcast = nullptr;
  };
  struct Slice {
    const ProcessGroup* group;
    float* data;
    size_t n;
    kernels::DeviceBuffer<float> mirror;  // (n) pinned, on node leaders of multi-node groups
    StreamCollectives::Event *final, *reduced, *staged, *done;
    State state;
    std::vector<MPI_Request> requests;  // the leaders' all-reduce, in chunks
  };

  // A collective that failed (a peer gone, a network error) ends the job, naming the slice.
  void check_async_error(size_t i) {
    const std::string error = streams_->async_error();
    if (error.empty()) return;
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(world_comm(), &rank));
    std::fprintf(stderr, "eth_train: rank %d (%s): %s over ranks %s failed: %s\n", rank, progress_text().c_str(),
                 sites_[i].what.c_str(), members_text(sites_[i].peers).c_str(), error.c_str());
    std::fflush(stderr);
    streams_->abort();
    MPI_Abort(world_comm(), 1);
  }

  kernels::Device& device_;
  std::unique_ptr<StreamCollectives> streams_;
  Stream reduce_stream_, broadcast_stream_;
  WatchdogExpiryHook abort_on_expiry_;
  std::map<const ProcessGroup*, Comms> comms_;
  std::vector<Slice> slices_;
  std::vector<WaitSite> sites_;  // per slice, named for the watchdog
  std::vector<size_t> started_;  // this step's slices, in the order started
  size_t next_broadcast_ = 0;
};

}  // namespace

std::unique_ptr<SumReducer> make_stream_reducer(kernels::Device& device, std::unique_ptr<StreamCollectives> streams) {
  return std::make_unique<StreamReducer>(device, std::move(streams));
}

}  // namespace eth

// The MPI implementation of SumReducer: per slice, the data as MPI sees it (wire_buffer.hpp),
// an event after the work that makes it final (and the copy to the mirror), and the
// hierarchical non-blocking sum (or, for a sharded slice, the sums to the shards' owners),
// started by poll() once the event is done.
#include <numeric>
#include <string>
#include <vector>

#include "mpi_topology/shard_collectives.hpp"
#include "mpi_topology/sum_reducer.hpp"
#include "mpi_topology/wire_buffer.hpp"

namespace eth {
namespace {

class MpiReducer final : public SumReducer {
 public:
  explicit MpiReducer(kernels::Device& device)
      : device_(device), direct_(mpi_collectives_read_device_buffers(device)) {}

  int add_slice(const ProcessGroup& group, float* data, size_t n, const std::string& what) override {
    // A slice summed over nobody else needs no mirror.
    slices_.push_back({&group, WireBuffer<float>(device_, data, n, direct_ || group.size() == 1), kernels::Event(device_),
                       State::idle, {}, {}, {}, what});
    return static_cast<int>(slices_.size()) - 1;
  }

  int add_owner_slice(const ProcessGroup& group, float* data, const std::vector<size_t>& counts,
                      const std::string& what) override {
    const int index = add_slice(group, data, std::accumulate(counts.begin(), counts.end(), size_t{0}), what);
    slices_.back().owner_counts = counts;
    return index;
  }

  void start(int index) override {
    Slice& s = slices_[static_cast<size_t>(index)];
    s.wire.stage_out();
    s.final.record();
    s.state = State::armed;
  }

  void poll() override {
    for (Slice& s : slices_) {
      if (s.state == State::armed && s.final.done()) begin_sum(s);
      if (s.state != State::summing) continue;
      if (s.owner_counts.empty())  // MPI progresses only inside MPI calls
        s.pending.test();
      else
        s.to_owners.test();
    }
  }

  void finish() override {
    for (Slice& s : slices_) {
      if (s.state == State::idle) continue;
      if (s.state == State::armed) {
        s.final.wait();
        begin_sum(s);
      }
      s.pending.wait(s.what);
      s.to_owners.wait(s.what);
      s.wire.stage_in();
      s.state = State::idle;
    }
  }

  std::string path() const override {
    return direct_ ? "MPI on host buffers" : "MPI through pinned host buffers (non-blocking collectives)";
  }

 private:
  enum class State { idle, armed, summing };
  struct Slice {
    const ProcessGroup* group;
    WireBuffer<float> wire;
    kernels::Event final;  // the slice (and its mirror) is final
    State state;
    PendingReduce pending;
    std::vector<size_t> owner_counts;  // a sharded slice: its shards' sizes; empty: summed for all
    PendingShards to_owners;
    std::string what;  // for the watchdog
  };

  void begin_sum(Slice& s) {
    if (s.owner_counts.empty())
      s.pending = s.group->start_allreduce_sum(s.wire.wire(), s.wire.size());
    else
      s.to_owners = PendingShards::reduce_to_owners(*s.group, s.wire.wire(), s.owner_counts);
    s.state = State::summing;
  }

  kernels::Device& device_;
  bool direct_;
  std::vector<Slice> slices_;
};

}  // namespace

std::unique_ptr<SumReducer> make_mpi_reducer(kernels::Device& device) { return std::make_unique<MpiReducer>(device); }

}  // namespace eth

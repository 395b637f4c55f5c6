// The emulation of NCCL over the asynchronous CPU backend (stream_collectives.hpp): each stream
// a WorkQueue (kernels/cpu/work_queue.hpp) with a thread of its own, each collective a blocking
// MPI call on a duplicate of the members' communicator, made on that thread. A collective thus
// holds its stream until every member's stream has reached it, and streams, events and the
// order of operations behave as CUDA's and NCCL's do; only the bytes move through MPI.
#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/work_queue.hpp"
#include "mpi_topology/mpi_counts.hpp"
#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/stream_collectives.hpp"

namespace eth {

// Where an event was last recorded: on the compute stream, a device event of its own per record
// (a stream that waits keeps the one it was given, however often the event is recorded again,
// as cudaStreamWaitEvent does); on another stream, that queue's count.
struct StreamCollectives::Event {
  Stream stream = kCompute;
  std::shared_ptr<kernels::Event> compute_mark;  // null: never recorded, done
  uint64_t count = 0;
};

struct StreamCollectives::Communicator {
  MPI_Comm comm = MPI_COMM_NULL;  // errors return, so that a failure becomes async_error()
};

namespace {

// Throws MPI's message: caught by the queue, it becomes the stream's async_error().
void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string(call) + ": " + std::string(text, static_cast<size_t>(length)));
}

class EmulatedStreams final : public StreamCollectives {
 public:
  explicit EmulatedStreams(kernels::Device& device) : device_(device) {
    queues_.emplace_back();  // kCompute: the device's own stream, reached through the device
  }
  ~EmulatedStreams() override {
    for (auto& q : queues_) {
      try {
        if (q) q->synchronize();
      } catch (const std::exception&) {  // reported through async_error() while the job ran
      }
    }
    queues_.clear();  // joins the threads before the communicators go
    for (auto& c : comms_) MPI_Comm_free(&c->comm);
  }

  std::string name() const override { return "NCCL (emulated: CPU streams, MPI underneath)"; }

  Stream new_stream() override {
    queues_.push_back(std::make_unique<kernels::WorkQueue>());
    return static_cast<Stream>(queues_.size()) - 1;
  }

  Communicator* new_communicator(MPI_Comm members) override {
    auto c = std::make_unique<Communicator>();
    MPI_CHECK(MPI_Comm_dup(members, &c->comm));
    MPI_CHECK(MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN));
    comms_.push_back(std::move(c));
    return comms_.back().get();
  }

  Event* new_event() override {
    events_.push_back(std::make_unique<Event>());
    return events_.back().get();
  }

  void record(Event* e, Stream stream) override {
    e->stream = stream;
    if (stream == kCompute) {
      e->compute_mark = std::make_shared<kernels::Event>(device_);
      e->compute_mark->record();
    } else {
      e->count = queue(stream).enqueued();
    }
  }

  void wait(Stream stream, Event* e) override {
    if (e->stream == kCompute) {
      if (e->compute_mark == nullptr) return;
      if (stream == kCompute) return;  // a stream is ordered after itself
      queue(stream).enqueue([mark = e->compute_mark] { mark->wait(); });
      return;
    }
    kernels::WorkQueue* q = &queue(e->stream);
    const uint64_t count = e->count;
    if (stream == kCompute)
      device_.enqueue_host_function([q, count] { q->wait_for(count); });
    else
      queue(stream).enqueue([q, count] { q->wait_for(count); });
  }

  bool done(Event* e) override {
    if (e->stream == kCompute) return e->compute_mark == nullptr || e->compute_mark->done();
    return queue(e->stream).completed(e->count);
  }

  // Each a blocking call on the stream's thread: the pieces posted (mpi_counts.hpp), then waited for.
  void all_reduce(float* data, size_t n, Communicator* c, Stream stream) override {
    queue(stream).enqueue([=] {
      std::vector<MPI_Request> requests;
      large_iallreduce(data, n, MPI_FLOAT, MPI_SUM, c->comm, requests);
      wait_all(requests);
    });
  }
  void reduce(float* data, size_t n, int root, Communicator* c, Stream stream) override {
    queue(stream).enqueue([=] {
      std::vector<MPI_Request> requests;
      large_ireduce(data, n, MPI_FLOAT, MPI_SUM, root, c->comm, requests);
      wait_all(requests);
    });
  }
  void broadcast(float* data, size_t n, int root, Communicator* c, Stream stream) override {
    queue(stream).enqueue([=] {
      std::vector<MPI_Request> requests;
      large_ibcast(data, n, MPI_FLOAT, root, c->comm, requests);
      wait_all(requests);
    });
  }
  // A group's operations become one operation of the stream: every send and receive posted,
  // then waited for together. Sends are synchronous (MPI_Issend), so that a send holds its
  // stream until the peer's receive has started, as NCCL's does, instead of completing early
  // into MPI's buffers.
  void group_start() override { grouping_ = true; }
  void group_end() override {
    grouping_ = false;
    if (group_.empty()) return;
    const Stream stream = group_.front().stream;
    for (const PointToPoint& op : group_)
      if (op.stream != stream) throw std::logic_error("emulated NCCL: a group spans streams");
    queue(stream).enqueue([ops = std::move(group_)] { run_point_to_point(ops); });
    group_.clear();
  }
  void send(const WireWord* data, size_t n, int peer, Communicator* c, Stream stream) override {
    point_to_point({const_cast<WireWord*>(data), n, peer, c, stream, true});
  }
  void recv(WireWord* data, size_t n, int peer, Communicator* c, Stream stream) override {
    point_to_point({data, n, peer, c, stream, false});
  }
  void copy(void* dst, const void* src, size_t bytes, Stream stream) override {
    if (stream == kCompute) return device_.copy(dst, src, bytes);
    queue(stream).enqueue([=] { std::memcpy(dst, src, bytes); });
  }

  std::string async_error() override {
    for (size_t s = 1; s < queues_.size(); s++) {
      try {
        queues_[s]->completed(0);
      } catch (const std::exception& e) {
        return e.what();
      }
    }
    return "";
  }
  // MPI_Abort, which the caller runs next, ends the calls the streams are blocked in.
  void abort() override {}
  size_t communicator_bytes() const override { return 0; }  // MPI's buffers are host memory
  // Counted as NCCL's would be, so that the memory check takes the same decisions as on GPUs.

 private:
  struct PointToPoint {
    WireWord* data;
    size_t n;
    int peer;
    Communicator* comm;
    Stream stream;
    bool send;
  };
  void point_to_point(const PointToPoint& op) {
    if (grouping_) return group_.push_back(op);
    queue(op.stream).enqueue([op] { run_point_to_point({op}); });
  }
  static void run_point_to_point(const std::vector<PointToPoint>& ops) {
    std::vector<MPI_Request> requests;
    for (const PointToPoint& op : ops) {
      for (size_t first = 0; first < op.n; first += mpi_count_limit()) {  // in pieces, as mpi_counts.hpp does
        const int count = static_cast<int>(std::min(mpi_count_limit(), op.n - first));
        requests.push_back(MPI_REQUEST_NULL);
        if (op.send)
          check(MPI_Issend(op.data + first, count, wire_word_type(), op.peer, 0, op.comm->comm, &requests.back()), "MPI_Issend");
        else
          check(MPI_Irecv(op.data + first, count, wire_word_type(), op.peer, 0, op.comm->comm, &requests.back()), "MPI_Irecv");
      }
    }
    wait_all(requests);
  }
  static void wait_all(std::vector<MPI_Request>& requests) {
    check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

  kernels::WorkQueue& queue(Stream stream) {
    if (stream <= kCompute || stream >= static_cast<Stream>(queues_.size()))
      throw std::logic_error("emulated NCCL: not a stream of its own");
    return *queues_[static_cast<size_t>(stream)];
  }

  kernels::Device& device_;
  std::vector<std::unique_ptr<kernels::WorkQueue>> queues_;  // [kCompute] empty
  std::vector<std::unique_ptr<Communicator>> comms_;
  std::vector<std::unique_ptr<Event>> events_;
  bool grouping_ = false;
  std::vector<PointToPoint> group_;  // between group_start() and group_end()
};

}  // namespace

std::unique_ptr<StreamCollectives> make_emulated_streams(kernels::Device& device) {
  return std::make_unique<EmulatedStreams>(device);
}

}  // namespace eth

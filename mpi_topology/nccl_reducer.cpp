// The NCCL implementation of SumReducer (CUDA builds): per process group, NCCL communicators
// over the group's members on this node, one for reduces and one for broadcasts, each with its
// own stream, so that a node leader can broadcast slice i after its MPI phase while the reduce
// of slice i + 1 is already queued, and every rank still issues each stream's operations in one
// global order. Across nodes the leaders sum a pinned mirror with MPI.
//
// NCCL is loaded at run time (dlopen), so that a binary built with CUDA still starts where NCCL
// is missing, and says so in one line, instead of failing to load.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/device_buffer.hpp"
#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/sum_reducer.hpp"
#include "mpi_topology/watchdog.hpp"

namespace eth {
namespace {

// The NCCL entry points this file uses, resolved from libnccl.so.2.
struct Nccl {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclReduce) reduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;

  // "" when loaded, else why not.
  std::string load() {
    void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
    if (lib == nullptr) return std::string("libnccl.so.2 could not be loaded: ") + dlerror();
    auto find = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      return fn != nullptr;
    };
    if (!find(get_unique_id, "ncclGetUniqueId") || !find(comm_init_rank, "ncclCommInitRank") ||
        !find(comm_destroy, "ncclCommDestroy") || !find(all_reduce, "ncclAllReduce") || !find(reduce, "ncclReduce") ||
        !find(broadcast, "ncclBroadcast") || !find(error_string, "ncclGetErrorString"))
      return "libnccl.so.2 lacks an entry point ETH needs";
    return "";
  }
};

Nccl& nccl() {
  static Nccl instance;
  return instance;
}

void check(ncclResult_t result, const char* call, int line) {
  if (result != ncclSuccess)
    throw std::runtime_error(std::string("NCCL error at ") + __FILE__ + ":" + std::to_string(line) + ": " + call +
                             ": " + nccl().error_string(result));
}
void check(cudaError_t err, const char* call, int line) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error at ") + __FILE__ + ":" + std::to_string(line) + ": " + call +
                             ": " + cudaGetErrorString(err));
}
#define NCCL_CHECK(call) check((call), #call, __LINE__)
#define CUDA_RT_CHECK(call) check((call), #call, __LINE__)

cudaEvent_t new_event() {
  cudaEvent_t e = nullptr;
  CUDA_RT_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

// Collective over node_comm: a communicator of its members, node-rank order.
ncclComm_t node_communicator(MPI_Comm node_comm) {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(node_comm, &rank));
  MPI_CHECK(MPI_Comm_size(node_comm, &size));
  ncclUniqueId id{};
  if (rank == 0) NCCL_CHECK(nccl().get_unique_id(&id));
  MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, node_comm));
  ncclComm_t comm = nullptr;
  NCCL_CHECK(nccl().comm_init_rank(&comm, size, id, rank));
  return comm;
}

class NcclReducer final : public SumReducer {
 public:
  explicit NcclReducer(kernels::Device& device)
      : device_(device), compute_(static_cast<cudaStream_t>(device.native_stream())) {
    CUDA_RT_CHECK(cudaStreamCreateWithFlags(&reduce_stream_, cudaStreamNonBlocking));
    CUDA_RT_CHECK(cudaStreamCreateWithFlags(&broadcast_stream_, cudaStreamNonBlocking));
  }

  ~NcclReducer() override {
    cudaStreamSynchronize(reduce_stream_);
    cudaStreamSynchronize(broadcast_stream_);
    for (Slice& s : slices_)
      for (cudaEvent_t e : {s.final, s.reduced, s.staged, s.done}) cudaEventDestroy(e);
    for (auto& [group, comms] : comms_) {
      nccl().comm_destroy(comms.reduce);
      nccl().comm_destroy(comms.broadcast);
    }
    cudaStreamDestroy(reduce_stream_);
    cudaStreamDestroy(broadcast_stream_);
  }

  int add_slice(const ProcessGroup& group, float* data, size_t n, const std::string& what) override {
    sites_.push_back({what, group.members()});
    // A slice of this rank alone is already its sum: no communicator, nothing to start.
    if (group.size() == 1) {
      slices_.push_back({&group, data, n, {}, new_event(), new_event(), new_event(), new_event(), State::done,
                         MPI_REQUEST_NULL});
      return static_cast<int>(slices_.size()) - 1;
    }
    if (!comms_.count(&group)) comms_[&group] = {node_communicator(group.node_comm()), node_communicator(group.node_comm())};
    Slice s{&group, data, n, {}, new_event(), new_event(), new_event(), new_event(), State::idle, MPI_REQUEST_NULL};
    const bool leader = group.leader_comm() != MPI_COMM_NULL;
    if (group.nodes() > 1 && leader) s.mirror = kernels::DeviceBuffer<float>(device_, n, kernels::Memory::pinned);
    slices_.push_back(std::move(s));
    return static_cast<int>(slices_.size()) - 1;
  }

  // The trainer gives jobs with sharded optimizer state the MPI reducer (docs/design.md).
  int add_owner_slice(const ProcessGroup&, float*, const std::vector<int>&, const std::string&) override {
    throw std::logic_error("the NCCL reducer sums whole slices only; sharded optimizer state takes the MPI reducer");
  }

  void start(int index) override {
    Slice& s = slices_[static_cast<size_t>(index)];
    if (s.group->size() == 1) return;
    const Comms& c = comms_.at(s.group);
    CUDA_RT_CHECK(cudaEventRecord(s.final, compute_));
    CUDA_RT_CHECK(cudaStreamWaitEvent(reduce_stream_, s.final));
    if (s.group->nodes() == 1) {  // all members on this node: one all-reduce does it
      NCCL_CHECK(nccl().all_reduce(s.data, s.data, s.n, ncclFloat, ncclSum, c.reduce, reduce_stream_));
      CUDA_RT_CHECK(cudaEventRecord(s.done, reduce_stream_));
      s.state = State::done;
      return;
    }
    NCCL_CHECK(nccl().reduce(s.data, s.data, s.n, ncclFloat, ncclSum, 0, c.reduce, reduce_stream_));
    CUDA_RT_CHECK(cudaEventRecord(s.reduced, reduce_stream_));
    if (s.mirror.data() != nullptr) {
      CUDA_RT_CHECK(cudaMemcpyAsync(s.mirror.data(), s.data, s.n * sizeof(float), cudaMemcpyDeviceToHost, reduce_stream_));
      CUDA_RT_CHECK(cudaEventRecord(s.staged, reduce_stream_));
      s.state = State::staging;
    } else {
      s.state = State::ready_to_broadcast;  // a non-leader receives the node's result
    }
    poll();
  }

  void poll() override {
    for (Slice& s : slices_) {
      if (s.state == State::staging && cudaEventQuery(s.staged) == cudaSuccess) {
        MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, s.mirror.data(), static_cast<int>(s.n), MPI_FLOAT, MPI_SUM,
                                 s.group->leader_comm(), &s.request));
        s.state = State::summing;
      }
      if (s.state == State::summing) {
        int complete = 0;
        MPI_CHECK(MPI_Test(&s.request, &complete, MPI_STATUS_IGNORE));
        if (complete) s.state = State::ready_to_broadcast;
      }
    }
    // Broadcasts go onto their stream strictly in slice order, as on every other rank.
    for (; next_broadcast_ < slices_.size(); next_broadcast_++) {
      Slice& s = slices_[next_broadcast_];
      if (s.state == State::done) continue;  // broadcast already, or summed by one all-reduce
      if (s.state != State::ready_to_broadcast) break;
      CUDA_RT_CHECK(cudaStreamWaitEvent(broadcast_stream_, s.reduced));
      if (s.mirror.data() != nullptr)
        CUDA_RT_CHECK(cudaMemcpyAsync(s.data, s.mirror.data(), s.n * sizeof(float), cudaMemcpyHostToDevice,
                                      broadcast_stream_));
      NCCL_CHECK(nccl().broadcast(s.data, s.data, s.n, ncclFloat, 0, comms_.at(s.group).broadcast, broadcast_stream_));
      CUDA_RT_CHECK(cudaEventRecord(s.done, broadcast_stream_));
      s.state = State::done;
    }
  }

  void finish() override {
    for (Slice& s : slices_) {
      while (s.state != State::idle && s.state != State::done) {
        if (s.state == State::staging) CUDA_RT_CHECK(cudaEventSynchronize(s.staged));
        if (s.state == State::summing) {
          watched_wait_one(s.request, sites_[static_cast<size_t>(&s - slices_.data())]);
          s.state = State::ready_to_broadcast;
        }
        poll();
      }
    }
    // The compute stream, not the host, waits for the results.
    for (Slice& s : slices_) {
      if (s.group->size() == 1) continue;
      if (s.state == State::done) CUDA_RT_CHECK(cudaStreamWaitEvent(compute_, s.done));
      s.state = State::idle;
    }
    next_broadcast_ = 0;
  }

  std::string path() const override {
    return "NCCL inside each node, MPI among node leaders through pinned host buffers";
  }

 private:
  // idle -> (staging -> summing ->) ready_to_broadcast -> done; single-node groups go straight
  // to done.
  enum class State { idle, staging, summing, ready_to_broadcast, done };
  struct Comms {
    ncclComm_t reduce = nullptr, broadcast = nullptr;
  };
  struct Slice {
    const ProcessGroup* group;
    float* data;
    size_t n;
    kernels::DeviceBuffer<float> mirror;  // (n) pinned, on node leaders of multi-node groups
    cudaEvent_t final, reduced, staged, done;
    State state;
    MPI_Request request;
  };

  kernels::Device& device_;
  cudaStream_t compute_;
  cudaStream_t reduce_stream_ = nullptr, broadcast_stream_ = nullptr;
  std::map<const ProcessGroup*, Comms> comms_;
  std::vector<Slice> slices_;
  std::vector<WaitSite> sites_;  // per slice: its leader all-reduce, named for the watchdog
  size_t next_broadcast_ = 0;
};

}  // namespace

std::string make_nccl_reducer(kernels::Device& device, std::unique_ptr<SumReducer>* reducer) {
  if (device.cuda_device() < 0) return "the backend is not on a CUDA device";
  static const std::string loaded = nccl().load();
  if (!loaded.empty()) return loaded;
  CUDA_RT_CHECK(cudaSetDevice(device.cuda_device()));
  *reducer = std::make_unique<NcclReducer>(device);
  return "";
}

}  // namespace eth

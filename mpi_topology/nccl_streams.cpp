// StreamCollectives on NCCL and CUDA streams (CUDA builds): streams are CUDA streams (kCompute
// the backend's own), events CUDA events, communicators NCCL's, made over the members'
// MPI communicator with an id broadcast from its first member.
//
// NCCL is loaded at run time (dlopen), so that a binary built with CUDA still starts where NCCL
// is missing, and says so in one line, instead of failing to load.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/stream_collectives.hpp"

namespace eth {

struct StreamCollectives::Event {
  cudaEvent_t event = nullptr;
};
struct StreamCollectives::Communicator {
  ncclComm_t comm = nullptr;
};

namespace {

// The NCCL entry points this file uses, resolved from libnccl.so.2.
struct Nccl {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclCommGetAsyncError) get_async_error = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclReduce) reduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
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
        !find(comm_destroy, "ncclCommDestroy") || !find(comm_abort, "ncclCommAbort") ||
        !find(get_async_error, "ncclCommGetAsyncError") || !find(all_reduce, "ncclAllReduce") ||
        !find(reduce, "ncclReduce") || !find(broadcast, "ncclBroadcast") || !find(send, "ncclSend") ||
        !find(recv, "ncclRecv") || !find(group_start, "ncclGroupStart") || !find(group_end, "ncclGroupEnd") ||
        !find(error_string, "ncclGetErrorString"))
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

size_t free_device_bytes() {
  size_t free = 0, total = 0;
  CUDA_RT_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

class NcclStreams final : public StreamCollectives {
 public:
  explicit NcclStreams(kernels::Device& device) {
    streams_.push_back(static_cast<cudaStream_t>(device.native_stream()));  // kCompute
  }
  ~NcclStreams() override {
    for (size_t s = 1; s < streams_.size(); s++) cudaStreamSynchronize(streams_[s]);
    for (auto& e : events_) cudaEventDestroy(e->event);
    for (auto& c : comms_) nccl().comm_destroy(c->comm);
    for (size_t s = 1; s < streams_.size(); s++) cudaStreamDestroy(streams_[s]);
  }

  std::string name() const override { return "NCCL"; }

  Stream new_stream() override {
    cudaStream_t stream = nullptr;
    CUDA_RT_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    streams_.push_back(stream);
    return static_cast<Stream>(streams_.size()) - 1;
  }

  Communicator* new_communicator(MPI_Comm members) override {
    int rank = 0, size = 1;
    MPI_CHECK(MPI_Comm_rank(members, &rank));
    MPI_CHECK(MPI_Comm_size(members, &size));
    ncclUniqueId id{};
    if (rank == 0) NCCL_CHECK(nccl().get_unique_id(&id));
    MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, members));
    auto c = std::make_unique<Communicator>();
    const size_t free_before = free_device_bytes();
    NCCL_CHECK(nccl().comm_init_rank(&c->comm, size, id, rank));
    const size_t free_after = free_device_bytes();
    if (free_after < free_before) communicator_bytes_ += free_before - free_after;
    comms_.push_back(std::move(c));
    return comms_.back().get();
  }

  Event* new_event() override {
    auto e = std::make_unique<Event>();
    CUDA_RT_CHECK(cudaEventCreateWithFlags(&e->event, cudaEventDisableTiming));
    events_.push_back(std::move(e));
    return events_.back().get();
  }

  void record(Event* e, Stream s) override { CUDA_RT_CHECK(cudaEventRecord(e->event, stream(s))); }
  void wait(Stream s, Event* e) override { CUDA_RT_CHECK(cudaStreamWaitEvent(stream(s), e->event)); }
  bool done(Event* e) override {
    const cudaError_t status = cudaEventQuery(e->event);
    if (status == cudaErrorNotReady) return false;
    CUDA_RT_CHECK(status);
    return true;
  }

  void all_reduce(float* data, size_t n, Communicator* c, Stream s) override {
    NCCL_CHECK(nccl().all_reduce(data, data, n, ncclFloat, ncclSum, c->comm, stream(s)));
  }
  void reduce(float* data, size_t n, int root, Communicator* c, Stream s) override {
    NCCL_CHECK(nccl().reduce(data, data, n, ncclFloat, ncclSum, root, c->comm, stream(s)));
  }
  void broadcast(float* data, size_t n, int root, Communicator* c, Stream s) override {
    NCCL_CHECK(nccl().broadcast(data, data, n, ncclFloat, root, c->comm, stream(s)));
  }
  void group_start() override { NCCL_CHECK(nccl().group_start()); }
  void group_end() override { NCCL_CHECK(nccl().group_end()); }
  void send(const WireWord* data, size_t n, int peer, Communicator* c, Stream s) override {
    NCCL_CHECK(nccl().send(data, n * sizeof(WireWord), ncclUint8, peer, c->comm, stream(s)));
  }
  void recv(WireWord* data, size_t n, int peer, Communicator* c, Stream s) override {
    NCCL_CHECK(nccl().recv(data, n * sizeof(WireWord), ncclUint8, peer, c->comm, stream(s)));
  }
  void copy(void* dst, const void* src, size_t bytes, Stream s) override {
    CUDA_RT_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream(s)));
  }

  std::string async_error() override {
    for (auto& c : comms_) {
      ncclResult_t result = ncclSuccess;
      if (nccl().get_async_error(c->comm, &result) != ncclSuccess) return "ncclCommGetAsyncError failed";
      if (result != ncclSuccess && result != ncclInProgress) return nccl().error_string(result);
    }
    return "";
  }
  void abort() override {
    for (auto& c : comms_) nccl().comm_abort(c->comm);
    comms_.clear();
  }
  size_t communicator_bytes() const override { return communicator_bytes_; }

 private:
  cudaStream_t stream(Stream s) const { return streams_.at(static_cast<size_t>(s)); }

  std::vector<cudaStream_t> streams_;  // [kCompute]: the backend's, not ours to destroy
  std::vector<std::unique_ptr<Communicator>> comms_;
  std::vector<std::unique_ptr<Event>> events_;
  size_t communicator_bytes_ = 0;  // device memory the communicators took at set-up
};

}  // namespace

std::string make_nccl_streams(kernels::Device& device, std::unique_ptr<StreamCollectives>* out) {
  if (device.cuda_device() < 0) return "the backend is not on a CUDA device";
  static const std::string loaded = nccl().load();
  if (!loaded.empty()) return loaded;
  CUDA_RT_CHECK(cudaSetDevice(device.cuda_device()));
  *out = std::make_unique<NcclStreams>(device);
  return "";
}

}  // namespace eth

// The CPU backend in asynchronous mode (ETH_BACKEND=cpu-async): each call is queued and run,
// in call order, on one worker thread, exactly as a CUDA stream runs kernels. The host thread
// runs ahead until it waits on an event, so a caller that reads or overwrites a buffer without
// the event the execution model asks for (kernels/device.hpp) computes a wrong result on the
// CPU, where CI sees it, instead of only on a GPU.
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu/work_queue.hpp"

namespace eth::kernels {
namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class AsyncCpuBackend final : public Backend {
 public:
  explicit AsyncCpuBackend(size_t device_memory_bytes) : cpu_(make_cpu_backend(device_memory_bytes)) {}

  AsyncCpuBackend(const AsyncCpuBackend&) = delete;
  AsyncCpuBackend& operator=(const AsyncCpuBackend&) = delete;

  std::string name() const override { return "cpu-async"; }
  bool host_addressable() const override { return true; }

  // ---- memory --------------------------------------------------------------------------
  void* allocate(size_t bytes) override { return cpu_->allocate(bytes); }
  void release(void* ptr) override {
    synchronize();
    cpu_->release(ptr);
  }
  void* allocate_pinned(size_t bytes) override { return cpu_->allocate_pinned(bytes); }
  size_t peak_allocated_bytes() const override { return cpu_->peak_allocated_bytes(); }
  size_t allocated_bytes() const override { return cpu_->allocated_bytes(); }
  size_t free_memory_bytes() const override { return cpu_->free_memory_bytes(); }
  void release_pinned(void* ptr) override {
    synchronize();
    cpu_->release_pinned(ptr);
  }
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override {
    // The caller may reuse host_src at once: take the bytes now.
    auto bytes_now = std::make_shared<std::vector<char>>(static_cast<const char*>(host_src),
                                                         static_cast<const char*>(host_src) + bytes);
    enqueue([dst, bytes_now] { std::memcpy(dst, bytes_now->data(), bytes_now->size()); });
  }
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override {
    synchronize();
    std::memcpy(host_dst, src, bytes);
  }
  void copy_to_device_async(void* dst, const void* pinned_src, size_t bytes) override {
    enqueue([=] { std::memcpy(dst, pinned_src, bytes); });
  }
  void copy_to_host_async(void* pinned_dst, const void* src, size_t bytes) override {
    enqueue([=] { std::memcpy(pinned_dst, src, bytes); });
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    enqueue([=] { std::memcpy(dst, src, bytes); });
  }
  void fill_zero(Tensor x, size_t n) override {
    enqueue([=, this] { cpu_->fill_zero(x, n); });
  }

  // ---- ordering ------------------------------------------------------------------------
  // An event is the count of operations enqueued when it was recorded; it is done once the
  // worker has completed that many. A timed one is recorded as an operation of its own that
  // notes when the worker reached it.
  struct AsyncEvent {
    uint64_t count = 0;
    bool timed = false;
    double at_ms = 0;  // written by the worker, read by the host after waiting for `count`
  };
  void synchronize() override { queue_.synchronize(); }
  void* create_event() override { return new AsyncEvent; }
  void* create_timed_event() override { return new AsyncEvent{0, true, 0}; }
  void destroy_event(void* event) override { delete static_cast<AsyncEvent*>(event); }
  void record_event(void* event) override {
    auto* e = static_cast<AsyncEvent*>(event);
    if (e->timed) enqueue([e] { e->at_ms = now_ms(); });
    e->count = queue_.enqueued();
  }
  bool event_done(void* event) override { return queue_.completed(static_cast<AsyncEvent*>(event)->count); }
  void wait_event(void* event) override { queue_.wait_for(static_cast<AsyncEvent*>(event)->count); }
  double elapsed_ms(void* start, void* end) override {
    wait_event(start);
    wait_event(end);
    return static_cast<AsyncEvent*>(end)->at_ms - static_cast<AsyncEvent*>(start)->at_ms;
  }
  void stall(double ms) override {
    enqueue([ms] { std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms)); });
  }
  void enqueue_host_function(std::function<void()> fn) override { enqueue(std::move(fn)); }

  // ---- precision -----------------------------------------------------------------------
  Precision precision() const override { return cpu_->precision(); }
  std::string precision_path() const override { return cpu_->precision_path(); }
  Arithmetic arithmetic() const override { return cpu_->arithmetic(); }
  AttentionPath attention_path(int T) const override { return cpu_->attention_path(T); }

  // ---- the operations: each queued (kernels/backend_ops.hpp's list) -------------------------
#define ETH_QUEUED_OP(ret, name, params, args) \
  ret name params override { return queued([=, this] { return cpu_->name args; }); }
  ETH_BACKEND_OPS(ETH_QUEUED_OP)
  ETH_FUSED_BACKEND_OPS(ETH_QUEUED_OP)
#undef ETH_QUEUED_OP

 private:
  void enqueue(std::function<void()> op) { queue_.enqueue(std::move(op)); }
  // An operation queued with its arguments copied; one with a result (sum_of_squares) waits
  // for it, as it does on a GPU.
  template <class Op>
  std::invoke_result_t<Op> queued(Op op) {
    if constexpr (std::is_void_v<std::invoke_result_t<Op>>) {
      enqueue(std::move(op));
    } else {
      std::invoke_result_t<Op> result{};
      enqueue([&result, op] { result = op(); });
      synchronize();
      return result;
    }
  }

  std::unique_ptr<Backend> cpu_;
  WorkQueue queue_;  // last: its thread runs operations on cpu_
};

}  // namespace

std::unique_ptr<Backend> make_async_cpu_backend(size_t device_memory_bytes) {
  return std::make_unique<AsyncCpuBackend>(device_memory_bytes);
}

}  // namespace eth::kernels

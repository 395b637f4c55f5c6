// Where a backend's buffers live and in what order its work runs: the execution model that the
// pipeline runtime and the communication layer (mpi_topology/) rely on, without any GPT op.
//
// Every operation a Backend offers is ENQUEUED, in call order, on the device's one compute
// stream, and may still be running when the call returns (a CUDA stream; the CPU backend's
// asynchronous mode runs the queue on a worker thread; its synchronous mode runs each operation
// before returning, which is one valid order). The host learns that work has finished only
// through an Event recorded after it, or through the few calls below that say they wait.
//
// Rules that follow, and that the runtime keeps:
//   - a buffer written by enqueued work is read by the host or by MPI only after an event
//     recorded after that work has completed;
//   - a buffer that enqueued work still reads is overwritten by the host or MPI only after an
//     event recorded after that work has completed;
//   - copy_to_device_async reads its pinned source when the copy runs, not when it is called.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "kernels/tensor.hpp"

namespace eth::kernels {

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;

  // True when buffers are host memory that MPI and host code may address directly (CPU);
  // false for device memory, which MPI may read only when it is CUDA-aware.
  virtual bool host_addressable() const = 0;
  // The CUDA device this computes on, or -1.
  virtual int cuda_device() const { return -1; }
  // The GPU's UUID ("GPU-..."), or "" off a GPU: what decides which ranks share a GPU, since
  // device indices differ between ranks that see different GPUs (kernels/gpu_binding.hpp).
  virtual std::string gpu_uuid() const { return ""; }
  // Device memory free for allocation now, in bytes; 0 when not limited apart from the host's
  // (the CPU backends).
  virtual size_t free_memory_bytes() const { return 0; }
  // The compute stream as its native handle (cudaStream_t), or nullptr: for a communication
  // library that orders its own stream after this one's events.
  virtual void* native_stream() const { return nullptr; }

  // ---- memory --------------------------------------------------------------------------
  virtual void* allocate(size_t bytes) = 0;   // device memory
  virtual void release(void* ptr) = 0;        // waits for queued work first
  virtual void* allocate_pinned(size_t bytes) = 0;  // host memory for async copies (page-locked on CUDA)
  virtual void release_pinned(void* ptr) = 0;       // waits for queued work first
  // The most bytes held through allocate() at once since the backend was made: the allocator's
  // high-water mark, to check memory models against; 0 where not tracked (CUDA).
  virtual size_t peak_allocated_bytes() const { return 0; }
  virtual size_t allocated_bytes() const { return 0; }  // held through allocate() now; 0: not tracked

  // Enqueued; host_src may be reused as soon as the call returns (the bytes are taken now).
  virtual void copy_to_device(void* dst, const void* host_src, size_t bytes) = 0;
  // Waits for all queued work, then copies: a point where the host reads a result.
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  // Enqueued; pinned_src is read when the copy runs: keep it unchanged until an event after it.
  virtual void copy_to_device_async(void* dst, const void* pinned_src, size_t bytes) = 0;
  // Enqueued; pinned_dst holds the bytes once an event recorded after the copy has completed.
  virtual void copy_to_host_async(void* pinned_dst, const void* src, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;  // device to device, enqueued
  virtual void fill_zero(Tensor x, size_t n) = 0;                   // n elements of x's type, enqueued

  // ---- ordering ------------------------------------------------------------------------
  virtual void synchronize() = 0;  // waits until all queued work has completed

  // Events, through the Event class below (which calls these).
  virtual void* create_event() = 0;
  virtual void destroy_event(void* event) = 0;
  virtual void record_event(void* event) = 0;      // marks everything enqueued so far
  virtual bool event_done(void* event) = 0;        // non-blocking
  virtual void wait_event(void* event) = 0;        // the host blocks until it is done
  // A timed event also records when the stream reached it: elapsed_ms(start, end), both done, is
  // the stream's time between them (the device time of the work enqueued in between).
  virtual void* create_timed_event() = 0;
  virtual double elapsed_ms(void* start, void* end) = 0;

  // Keeps the stream busy for `ms`, as `ms` of work would: the --slowdown test switch
  // (lib/runtime/slowdown.hpp), which must slow what the device does, not only the host.
  virtual void stall(double ms) = 0;

  // Runs `fn` on the host once the stream reaches it, and holds the stream until it returns
  // (cudaLaunchHostFunc): how another queue's completion is made a point of this stream, where
  // no device event can express it (the emulated NCCL streams, mpi_topology/emulated_streams.cpp).
  // `fn` must not call this device.
  virtual void enqueue_host_function(std::function<void()> fn) = 0;
};

// A point in a device's compute stream. A fresh event counts as done; record() moves it to the
// end of the work enqueued so far. Move-only; one per purpose, re-recorded as the step runs.
class Event {
 public:
  Event() = default;
  explicit Event(Device& device) : device_(&device), handle_(device.create_event()) {}
  static Event timed(Device& device) {
    Event e;
    e.device_ = &device;
    e.handle_ = device.create_timed_event();
    return e;
  }
  ~Event() {
    if (device_ != nullptr) device_->destroy_event(handle_);
  }
  Event(Event&& other) noexcept { *this = std::move(other); }
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      if (device_ != nullptr) device_->destroy_event(handle_);
      device_ = std::exchange(other.device_, nullptr);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record() { device_->record_event(handle_); }
  bool done() const { return device_->event_done(handle_); }
  void wait() const { device_->wait_event(handle_); }
  // Both timed: the stream's ms from `start` to this event (waits for this one).
  double ms_since(const Event& start) const {
    wait();
    return device_->elapsed_ms(start.handle_, handle_);
  }
  void* handle() const { return handle_; }  // cudaEvent_t on CUDA, for another stream to wait on

 private:
  Device* device_ = nullptr;
  void* handle_ = nullptr;
};

}  // namespace eth::kernels

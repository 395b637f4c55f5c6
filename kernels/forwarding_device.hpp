// The Device part of a backend (kernels/device.hpp: memory, copies, the stream and its events)
// passed to another device, and nothing else: a backend that computes its own operations on
// another's memory and stream derives from ForwardingDevice<Backend> (the emulated backend:
// the GPU ops in the interpreter, on the CPU backend's host memory), so that every operation it
// does not implement leaves it abstract, a compile error, instead of running on the inner device.
// ForwardingBackend (forwarding_backend.hpp) adds the operations, for decorators that change a
// few. Does not own the inner device.
#pragma once

#include <functional>
#include <utility>

#include "kernels/device.hpp"

namespace eth::kernels {

template <class Base>
class ForwardingDevice : public Base {
 public:
  explicit ForwardingDevice(Device& inner) : inner_(inner) {}

  std::string name() const override { return inner_.name(); }
  bool host_addressable() const override { return inner_.host_addressable(); }
  int cuda_device() const override { return inner_.cuda_device(); }
  std::string gpu_uuid() const override { return inner_.gpu_uuid(); }
  size_t free_memory_bytes() const override { return inner_.free_memory_bytes(); }
  void* native_stream() const override { return inner_.native_stream(); }

  // ---- memory --------------------------------------------------------------------------
  void* allocate(size_t bytes) override { return inner_.allocate(bytes); }
  void release(void* ptr) override { inner_.release(ptr); }
  void* allocate_pinned(size_t bytes) override { return inner_.allocate_pinned(bytes); }
  void release_pinned(void* ptr) override { inner_.release_pinned(ptr); }
  size_t peak_allocated_bytes() const override { return inner_.peak_allocated_bytes(); }
  size_t allocated_bytes() const override { return inner_.allocated_bytes(); }
  void copy_to_device(void* dst, const void* src, size_t bytes) override { inner_.copy_to_device(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override { inner_.copy_to_host(dst, src, bytes); }
  void copy_to_device_async(void* dst, const void* src, size_t bytes) override {
    inner_.copy_to_device_async(dst, src, bytes);
  }
  void copy_to_host_async(void* dst, const void* src, size_t bytes) override {
    inner_.copy_to_host_async(dst, src, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) override { inner_.copy(dst, src, bytes); }
  void fill_zero(Tensor x, size_t n) override { inner_.fill_zero(x, n); }

  // ---- ordering ------------------------------------------------------------------------
  void synchronize() override { inner_.synchronize(); }
  void* create_event() override { return inner_.create_event(); }
  void destroy_event(void* event) override { inner_.destroy_event(event); }
  void record_event(void* event) override { inner_.record_event(event); }
  bool event_done(void* event) override { return inner_.event_done(event); }
  void wait_event(void* event) override { inner_.wait_event(event); }
  void* create_timed_event() override { return inner_.create_timed_event(); }
  double elapsed_ms(void* start, void* end) override { return inner_.elapsed_ms(start, end); }
  void stall(double ms) override { inner_.stall(ms); }
  void enqueue_host_function(std::function<void()> fn) override { inner_.enqueue_host_function(std::move(fn)); }

 private:
  Device& inner_;
};

}  // namespace eth::kernels

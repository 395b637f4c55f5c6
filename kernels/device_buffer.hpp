// An owning, move-only array in a backend's memory.
#pragma once

#include <cstddef>
#include <utility>

#include "kernels/backend.hpp"

namespace eth::kernels {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend& backend, size_t count)
      : backend_(&backend), data_(static_cast<T*>(backend.allocate(count * sizeof(T)))), count_(count) {}
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      backend_ = std::exchange(other.backend_, nullptr);
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return count_; }

 private:
  void reset() {
    if (data_ != nullptr) backend_->release(data_);
    data_ = nullptr;
    count_ = 0;
  }
  Backend* backend_ = nullptr;
  T* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace eth::kernels

// An owning, move-only array in a device's memory, or in its pinned host memory.
#pragma once

#include <cstddef>
#include <utility>

#include "kernels/device.hpp"

namespace eth::kernels {

enum class Memory { device, pinned };

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device& device, size_t count, Memory where = Memory::device)
      : device_(&device),
        data_(static_cast<T*>(where == Memory::device ? device.allocate(count * sizeof(T))
                                                      : device.allocate_pinned(count * sizeof(T)))),
        count_(count),
        where_(where) {}
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = std::exchange(other.device_, nullptr);
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
      where_ = other.where_;
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
    if (data_ != nullptr) {
      if (where_ == Memory::device) device_->release(data_);
      else device_->release_pinned(data_);
    }
    data_ = nullptr;
    count_ = 0;
  }
  Device* device_ = nullptr;
  T* data_ = nullptr;
  size_t count_ = 0;
  Memory where_ = Memory::device;
};

}  // namespace eth::kernels

// Host fp32 values to and from a tensor of either element type: bf16 widened exactly when read,
// rounded to nearest even when written. For checks and tools that set or look at activations,
// logits or gradients of any path. Both wait for queued work (Device::copy_to_host/_device).
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/cpu/bf16.hpp"
#include "kernels/device.hpp"
#include "kernels/tensor.hpp"

namespace eth::kernels {

inline std::vector<float> copy_to_host_f32(Device& device, ConstTensor t, size_t n) {
  std::vector<float> out(n);
  if (t.type() == ElementType::f32) {
    device.copy_to_host(out.data(), t.data(), n * sizeof(float));
    return out;
  }
  std::vector<bf16> stored(n);
  device.copy_to_host(stored.data(), t.data(), n * sizeof(bf16));
  for (size_t i = 0; i < n; i++) out[i] = cpu::to_float(stored[i]);
  return out;
}

inline void copy_to_device_f32(Device& device, Tensor t, const float* host, size_t n) {
  if (t.type() == ElementType::f32) return device.copy_to_device(t.data(), host, n * sizeof(float));
  std::vector<bf16> stored(n);
  for (size_t i = 0; i < n; i++) stored[i] = cpu::to_bf16(host[i]);
  device.copy_to_device(t.data(), stored.data(), n * sizeof(bf16));
}

}  // namespace eth::kernels

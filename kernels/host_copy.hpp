// Host fp32 values to and from a tensor of any element type: bf16 and fp16 widened exactly when
// read, rounded to nearest even when written. For checks and tools that set or look at activations,
// logits or gradients of any path. Both wait for queued work (Device::copy_to_host/_device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/bf16.hpp"
#include "kernels/fp16.hpp"
#include "kernels/device.hpp"
#include "kernels/tensor.hpp"

namespace eth::kernels {

inline std::vector<float> copy_to_host_f32(Device& device, ConstTensor t, size_t n) {
  std::vector<float> out(n);
  if (t.type() == ElementType::f32) {
    device.copy_to_host(out.data(), t.data(), n * sizeof(float));
    return out;
  }
  std::vector<uint16_t> stored(n);
  device.copy_to_host(stored.data(), t.data(), n * sizeof(uint16_t));
  const bool bf16_bits = t.type() == ElementType::bf16;
  for (size_t i = 0; i < n; i++) out[i] = bf16_bits ? cpu::to_float(bf16{stored[i]}) : fp16_to_float(stored[i]);
  return out;
}

inline void copy_to_device_f32(Device& device, Tensor t, const float* host, size_t n) {
  if (t.type() == ElementType::f32) return device.copy_to_device(t.data(), host, n * sizeof(float));
  std::vector<uint16_t> stored(n);
  const bool bf16_bits = t.type() == ElementType::bf16;
  for (size_t i = 0; i < n; i++) stored[i] = bf16_bits ? cpu::to_bf16(host[i]).bits : fp16_bits(host[i]);
  device.copy_to_device(t.data(), stored.data(), n * sizeof(uint16_t));
}

}  // namespace eth::kernels

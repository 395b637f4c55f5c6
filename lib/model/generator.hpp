// The whole GPT-2 on one device, for generation: its parameters in ETH's one-stage layout
// (ParamLayout(config, {0, L})) and a key/value cache per layer, so that each new token costs
// one position's forward. The layer math is the Stage's (lib/model/stage.cpp), through the same
// backend operations, with Backend::attention_decode in place of attention_forward:
//
//   prefill(tokens)  the cache restarts with these tokens at positions [0, n)
//   step(token)      one more position
//
// Both return the logits (Vp) of the last position, on the host; ids V..Vp-1 are padding
// (sampling never picks them, lib/model/sampling.hpp). Single sequence (B = 1).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/device_buffer.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/param_layout.hpp"

namespace eth {

class Generator {
 public:
  // host_params: ParamLayout(config, {0, L}).size() floats. capacity: the positions the cache
  // holds, 1 to max_seq_len (0: max_seq_len).
  Generator(const GptConfig& config, kernels::Backend& backend, const float* host_params, int capacity = 0);

  // Device bytes a Generator of this capacity allocates: parameters, caches, activations.
  static size_t device_bytes(const GptConfig& config, int capacity = 0);

  const GptConfig& config() const { return config_; }
  int capacity() const { return capacity_; }
  int position() const { return position_; }  // positions cached

  const std::vector<float>& prefill(const std::vector<int32_t>& tokens);  // 1 <= size <= capacity
  const std::vector<float>& step(int32_t token);                          // position() < capacity

 private:
  // The forward of tokens at positions [position_, position_ + n), appending to the caches.
  const std::vector<float>& extend(const int32_t* tokens, int n);

  GptConfig config_;
  ParamLayout layout_;
  kernels::Backend& backend_;
  int capacity_;
  int position_ = 0;

  kernels::DeviceBuffer<float> params_;          // (layout_.size())
  kernels::DeviceBuffer<float> k_cache_, v_cache_;  // (L, NH, capacity, hs) each
  kernels::DeviceBuffer<int32_t> tokens_;        // (capacity)
  // Activations of the new rows (n <= capacity), reused by every layer: no backward.
  kernels::DeviceBuffer<float> x_, y_;           // (capacity, C): the residual stream, in and after attention
  kernels::DeviceBuffer<float> ln_, branch_, atty_;  // (capacity, C)
  kernels::DeviceBuffer<float> mean_, rstd_;     // (capacity)
  kernels::DeviceBuffer<float> qkv_;             // (capacity, 3C)
  kernels::DeviceBuffer<float> fch_, fch_gelu_;  // (capacity, 4C)
  kernels::DeviceBuffer<float> logits_;          // (Vp): the last row's
  std::vector<float> host_logits_;               // (Vp)
};

}  // namespace eth

// The whole model (either family) on one device, for generation: its parameters in ETH's one-stage layout
// (ParamLayout(config, {0, L})) and a key/value cache per layer, so that each new token costs
// one position's forward. Each layer is the Stage's block (lib/model/block_forward.hpp, the same
// backend operations, so the same numbers), with Backend::attention_decode as its attention:
//
//   prefill(tokens)  the cache restarts with these tokens at positions [0, n)
//   step(token)      one more position
//
// Both return the logits (Vp) of the last position, on the host in fp32; ids V..Vp-1 are padding
// (sampling never picks them, lib/model/sampling.hpp). Single sequence (B = 1).
//
// Storage is the Stage's: the caches and activations are of the backend's element type (bf16 on
// the bf16 path, 2 bytes each), and the kernels read bf16 copies of the parameters there. Of the
// fp32 masters, which nothing here updates, it keeps only what the kernels read as fp32: all of
// them on fp32, the embedding's (wte, and wpe with learned positions) on bf16.
#pragma once

#include <cstddef>
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
  Generator(const ModelConfig& config, kernels::Backend& backend, const float* host_params, int capacity = 0);

  // Device bytes a Generator of this capacity allocates on a backend of this storage type:
  // parameters (fp32 masters, or the embedding's and bf16 copies of all), caches, activations.
  static size_t device_bytes(const ModelConfig& config, kernels::ElementType storage, int capacity = 0);

  const ModelConfig& config() const { return config_; }
  int capacity() const { return capacity_; }
  int position() const { return position_; }  // positions cached

  const std::vector<float>& prefill(const std::vector<int32_t>& tokens);  // 1 <= size <= capacity
  const std::vector<float>& step(int32_t token);                          // position() < capacity

 private:
  // The forward of tokens at positions [position_, position_ + n), appending to the caches.
  const std::vector<float>& extend(const int32_t* tokens, int n);
  kernels::Tensor stored(kernels::DeviceBuffer<std::byte>& buffer) const { return {buffer.data(), storage_}; }
  kernels::ConstTensor weights() const;  // the bf16 copies on the bf16 path, else the masters
  size_t master_floats() const;          // what params_ holds

  ModelConfig config_;
  ParamLayout layout_;
  kernels::Backend& backend_;
  kernels::ElementType storage_;
  int capacity_;
  int position_ = 0;

  // fp32 masters: (layout_.size()) on fp32; on bf16 the layout's first embedding_floats(): the embedding.
  kernels::DeviceBuffer<float> params_;
  kernels::DeviceBuffer<uint16_t> param_copies_;  // (layout_.size()) of the storage type, 16-bit paths only
  kernels::DeviceBuffer<int32_t> tokens_;             // (capacity)
  // Of the storage type. The caches, then the activations of the new rows (n <= capacity),
  // reused by every layer: no backward.
  kernels::DeviceBuffer<std::byte> k_cache_, v_cache_;  // (L, NKV, capacity, hs) each
  kernels::DeviceBuffer<std::byte> x_, y_;              // (capacity, C): the residual stream, in and after attention
  kernels::DeviceBuffer<std::byte> ln_, branch_;         // (capacity, C)
  kernels::DeviceBuffer<std::byte> qkv_;                 // (capacity, QKV)
  kernels::DeviceBuffer<std::byte> atty_;                // (capacity, NH hs)
  kernels::DeviceBuffer<std::byte> fch_, fch_act_;       // (capacity, F), (capacity, FA)
  kernels::DeviceBuffer<std::byte> logits_;              // (Vp): the last row's
  kernels::DeviceBuffer<float> mean_, rstd_;             // (capacity) fp32
  kernels::DeviceBuffer<float> inv_freq_;                // (hs / 2) rotary positions only
  std::vector<float> host_logits_;                       // (Vp)
};

}  // namespace eth

#include "lib/model/generator.hpp"

#include <cassert>
#include <optional>

#include "kernels/host_copy.hpp"
#include "lib/model/block_forward.hpp"

namespace eth {
namespace {

// Elements of each buffer kind, in the order the constructor allocates them.
struct Sizes {
  size_t params, cache, rows_c, rows, rows_3c, rows_4c, vp;
};
Sizes sizes(const ModelConfig& config, int capacity) {
  const size_t T = static_cast<size_t>(capacity), C = static_cast<size_t>(config.channels);
  return {ParamLayout(config, {0, config.num_layers}).size(), static_cast<size_t>(config.num_layers) * T * C,
          T * C, T, 3 * T * C, 4 * T * C, static_cast<size_t>(config.padded_vocab_size)};
}
int resolved_capacity(const ModelConfig& config, int capacity) { return capacity == 0 ? config.max_seq_len : capacity; }

// The floats of the layout up to the end of wpe: the embedding, which the one-stage layout starts with.
size_t embedding_floats(const ModelConfig& config, const ParamLayout& layout) {
  assert(layout.wte() == 0);
  return layout.wpe() + static_cast<size_t>(config.max_seq_len) * config.channels;
}

}  // namespace

size_t Generator::device_bytes(const ModelConfig& config, kernels::ElementType storage, int capacity) {
  const Sizes s = sizes(config, resolved_capacity(config, capacity));
  const size_t e = kernels::element_bytes(storage);
  const bool sixteen = storage != kernels::ElementType::f32;
  const size_t masters = sixteen ? embedding_floats(config, ParamLayout(config, {0, config.num_layers})) : s.params;
  const size_t copies = sixteen ? sizeof(uint16_t) * s.params : 0;
  // masters and copies; tokens; two caches, five (T, C), qkv, two (T, 4C), logits; mean and rstd
  return sizeof(float) * masters + copies + sizeof(int32_t) * s.rows +
         e * (2 * s.cache + 5 * s.rows_c + s.rows_3c + 2 * s.rows_4c + s.vp) + sizeof(float) * 2 * s.rows;
}

Generator::Generator(const ModelConfig& config, kernels::Backend& backend, const float* host_params, int capacity)
    : config_(config),
      layout_(config, {0, config.num_layers}),
      backend_(backend),
      storage_(backend.storage()),
      capacity_(resolved_capacity(config, capacity)) {
  assert(0 < capacity_ && capacity_ <= config.max_seq_len);
  const Sizes s = sizes(config, capacity_);
  const size_t e = kernels::element_bytes(storage_);
  params_ = kernels::DeviceBuffer<float>(backend, master_floats());
  backend.copy_to_device(params_.data(), host_params, master_floats() * sizeof(float));
  if (storage_ != kernels::ElementType::f32) {  // rounded on the host, as the device would
    param_copies_ = kernels::DeviceBuffer<uint16_t>(backend, s.params);
    kernels::copy_to_device_f32(backend, {param_copies_.data(), storage_}, host_params, s.params);
  }
  tokens_ = kernels::DeviceBuffer<int32_t>(backend, s.rows);
  auto make = [&](kernels::DeviceBuffer<std::byte>& b, size_t elements) {
    b = kernels::DeviceBuffer<std::byte>(backend, elements * e);
  };
  make(k_cache_, s.cache);
  make(v_cache_, s.cache);
  for (auto* b : {&x_, &y_, &ln_, &branch_, &atty_}) make(*b, s.rows_c);
  make(qkv_, s.rows_3c);
  make(fch_, s.rows_4c);
  make(fch_gelu_, s.rows_4c);
  make(logits_, s.vp);
  mean_ = kernels::DeviceBuffer<float>(backend, s.rows);
  rstd_ = kernels::DeviceBuffer<float>(backend, s.rows);
  host_logits_.resize(s.vp);
}

size_t Generator::master_floats() const {
  return storage_ != kernels::ElementType::f32 ? embedding_floats(config_, layout_) : layout_.size();
}

kernels::ConstTensor Generator::weights() const {
  if (storage_ != kernels::ElementType::f32) return {param_copies_.data(), storage_};
  return params_.data();
}

const std::vector<float>& Generator::prefill(const std::vector<int32_t>& tokens) {
  assert(!tokens.empty() && static_cast<int>(tokens.size()) <= capacity_);
  position_ = 0;
  return extend(tokens.data(), static_cast<int>(tokens.size()));
}

const std::vector<float>& Generator::step(int32_t token) { return extend(&token, 1); }

const std::vector<float>& Generator::extend(const int32_t* tokens, int n) {
  assert(n > 0 && position_ + n <= capacity_);
  const int C = config_.channels, NH = config_.num_heads, T0 = position_;
  const size_t layer_cache = static_cast<size_t>(capacity_) * C;  // one layer's (NH, capacity, hs)
  const kernels::ConstTensor p = weights();
  const LayerOffsets& w = layout_.layer_offsets();
  const kernels::Tensor x = stored(x_), y = stored(y_), ln = stored(ln_), branch = stored(branch_);
  const kernels::Tensor atty = stored(atty_), qkv = stored(qkv_), fch = stored(fch_), fch_gelu = stored(fch_gelu_);
  backend_.copy_to_device(tokens_.data(), tokens, sizeof(int32_t) * n);
  // (n, C): the positions' rows of wpe start at T0. The embedding reads the fp32 masters, as the Stage's.
  const float* masters = params_.data();
  backend_.encoder_forward(x, tokens_.data(), masters + layout_.wte(),
                           masters + layout_.wpe() + static_cast<size_t>(T0) * C, 1, n, C);
  // The first ln1 alone; ln2 and the next ln1 fused with the residual add before them (Stage).
  backend_.layernorm_forward(ln, mean_.data(), rstd_.data(), x, p + layout_.layer(0) + w.ln1_w,
                             p + layout_.layer(0) + w.ln1_b, n, C);
  // One layer's activations at a time: x the residual stream (each block's input and output),
  // y its res2, ln each layernorm's output in turn (ln1, ln2, the next ln1).
  const BlockActivations block{x, ln, qkv, atty, y, ln, mean_.data(), rstd_.data(), fch, fch_gelu, branch, x};
  for (int l = 0; l < config_.num_layers; l++) {
    const kernels::Tensor k = stored(k_cache_) + layer_cache * l;
    const kernels::Tensor v = stored(v_cache_) + layer_cache * l;
    const auto attend = [&](kernels::Tensor out, kernels::ConstTensor qkv_new) {
      backend_.attention_decode(out, k, v, qkv_new, 1, n, T0, capacity_, C, NH);
    };
    std::optional<NextLayernorm> next;
    if (l + 1 < config_.num_layers)
      next = NextLayernorm{ln, mean_.data(), rstd_.data(), p + layout_.layer(l + 1) + w.ln1_w,
                           p + layout_.layer(l + 1) + w.ln1_b};
    block_forward(backend_, block, p + layout_.layer(l), w, n, C, attend, next ? &*next : nullptr);
  }
  // The final layernorm and the tied head, on the last row only.
  const kernels::ConstTensor last = x + static_cast<size_t>(n - 1) * C;  // (1, C)
  backend_.layernorm_forward(ln, mean_.data(), rstd_.data(), last, p + layout_.lnf_w(), p + layout_.lnf_b(), 1, C);
  backend_.matmul_forward(stored(logits_), ln, p + layout_.head_wte(), nullptr, 1, C, config_.padded_vocab_size);
  host_logits_ = kernels::copy_to_host_f32(backend_, stored(logits_), host_logits_.size());  // waits
  position_ += n;
  return host_logits_;
}

}  // namespace eth

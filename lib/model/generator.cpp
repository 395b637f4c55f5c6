#include "lib/model/generator.hpp"

#include <cassert>
#include <optional>

#include "kernels/host_copy.hpp"
#include "lib/model/block_forward.hpp"
#include "lib/model/model_norm.hpp"
#include "lib/model/model_tensors.hpp"
#include "lib/model/rotary.hpp"

namespace eth {
namespace {

// Elements of each buffer kind, in the order the constructor allocates them.
struct Sizes {
  size_t params, cache, rows_c, rows, rows_qkv, rows_atty, rows_fc, rows_fc_act, vp, inv_freq;
};
Sizes sizes(const ModelConfig& config, int capacity) {
  const size_t T = static_cast<size_t>(capacity), C = static_cast<size_t>(config.channels);
  const LayerWidths W = layer_widths(config);
  return {ParamLayout(config, {0, config.num_layers}).size(),
          static_cast<size_t>(config.num_layers) * T * static_cast<size_t>(config.kv_channels()),
          T * C, T, T * W.qkv, T * W.atty, T * W.fc, T * W.fc_act, static_cast<size_t>(config.padded_vocab_size),
          rotary_table_floats(config)};
}
int resolved_capacity(const ModelConfig& config, int capacity) { return capacity == 0 ? config.max_seq_len : capacity; }

// The floats of the layout up to the end of the embedding (wte, and wpe where positions are
// learned), which the one-stage layout starts with.
size_t embedding_floats(const ModelConfig& config, const ParamLayout& layout) {
  assert(layout.wte() == 0);
  if (config.positions == PositionKind::rotary) return layout.wte_size();
  return layout.wpe() + static_cast<size_t>(config.max_seq_len) * config.channels;
}

}  // namespace

size_t Generator::device_bytes(const ModelConfig& config, kernels::ElementType storage, int capacity) {
  const Sizes s = sizes(config, resolved_capacity(config, capacity));
  const size_t e = kernels::element_bytes(storage);
  const bool sixteen = storage != kernels::ElementType::f32;
  const size_t masters = sixteen ? embedding_floats(config, ParamLayout(config, {0, config.num_layers})) : s.params;
  const size_t copies = sixteen ? sizeof(uint16_t) * s.params : 0;
  // masters and copies; tokens; two caches, four (T, C), qkv, atty, fch, fch_act, logits; mean,
  // rstd and the rotary table
  return sizeof(float) * masters + copies + sizeof(int32_t) * s.rows +
         e * (2 * s.cache + 4 * s.rows_c + s.rows_qkv + s.rows_atty + s.rows_fc + s.rows_fc_act + s.vp) +
         sizeof(float) * (2 * s.rows + s.inv_freq);
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
  for (auto* b : {&x_, &y_, &ln_, &branch_}) make(*b, s.rows_c);
  make(qkv_, s.rows_qkv);
  make(atty_, s.rows_atty);
  make(fch_, s.rows_fc);
  make(fch_act_, s.rows_fc_act);
  make(logits_, s.vp);
  mean_ = kernels::DeviceBuffer<float>(backend, s.rows);
  rstd_ = kernels::DeviceBuffer<float>(backend, s.rows);
  if (s.inv_freq > 0) {
    const std::vector<float> inv_freq = rotary_inverse_frequencies(config);
    inv_freq_ = kernels::DeviceBuffer<float>(backend, s.inv_freq);
    backend.copy_to_device(inv_freq_.data(), inv_freq.data(), s.inv_freq * sizeof(float));
  }
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
  const int C = config_.channels, T0 = position_;
  const kernels::AttentionHeads heads = attention_heads(config_);
  const size_t layer_cache = static_cast<size_t>(capacity_) * config_.kv_channels();  // one layer's (NKV, capacity, hs)
  const kernels::ConstTensor p = weights();
  const LayerOffsets& w = layout_.layer_offsets();
  const ModelNorm norm(backend_, config_);
  const kernels::Tensor x = stored(x_), y = stored(y_), ln = stored(ln_), branch = stored(branch_);
  const kernels::Tensor atty = stored(atty_), qkv = stored(qkv_), fch = stored(fch_), fch_act = stored(fch_act_);
  backend_.copy_to_device(tokens_.data(), tokens, sizeof(int32_t) * n);
  // (n, C): the positions' rows of wpe (learned positions) start at T0. The embedding reads the
  // fp32 masters, as the Stage's.
  const float* masters = params_.data();
  const float* positions =
      config_.positions == PositionKind::learned ? masters + layout_.wpe() + static_cast<size_t>(T0) * C : nullptr;
  backend_.encoder_forward(x, tokens_.data(), masters + layout_.wte(), positions, 1, n, C);
  // The first ln1 alone; ln2 and the next ln1 fused with the residual add before them (Stage).
  const NormOutput ln_out{ln, mean_.data(), rstd_.data()};
  norm.forward(ln_out, x, p + layout_.layer(0) + w.ln1_w, optional_tensor(p + layout_.layer(0), w.ln1_b), n);
  // One layer's activations at a time: x the residual stream (each block's input and output),
  // y its res2, ln each norm's output in turn (ln1, ln2, the next ln1).
  const BlockActivations block{x, ln, qkv, atty, y, ln_out, fch, fch_act, branch, x};
  for (int l = 0; l < config_.num_layers; l++) {
    const kernels::Tensor k = stored(k_cache_) + layer_cache * l;
    const kernels::Tensor v = stored(v_cache_) + layer_cache * l;
    const auto attend = [&](kernels::Tensor out, kernels::ConstTensor qkv_new) {
      backend_.attention_decode(out, k, v, qkv_new, 1, n, T0, capacity_, heads);
    };
    std::optional<NextNorm> next;
    if (l + 1 < config_.num_layers)
      next = NextNorm{ln_out, p + layout_.layer(l + 1) + w.ln1_w, optional_tensor(p + layout_.layer(l + 1), w.ln1_b)};
    block_forward(backend_, config_, block, p + layout_.layer(l), w, {1, n, T0, inv_freq_.data()}, attend,
                  next ? &*next : nullptr);
  }
  // The final norm and the head, on the last row only.
  const kernels::ConstTensor last = x + static_cast<size_t>(n - 1) * C;  // (1, C)
  norm.forward(ln_out, last, p + layout_.lnf_w(), optional_tensor(p, layout_.lnf_b()), 1);
  backend_.matmul_forward(stored(logits_), ln, p + layout_.head_wte(), nullptr, 1, C, config_.padded_vocab_size);
  host_logits_ = kernels::copy_to_host_f32(backend_, stored(logits_), host_logits_.size());  // waits
  position_ += n;
  return host_logits_;
}

}  // namespace eth

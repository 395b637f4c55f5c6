#include "lib/model/generator.hpp"

#include <cassert>

namespace eth {
namespace {

// Floats of each buffer kind, in the order the constructor allocates them.
struct Sizes {
  size_t params, cache, rows_c, rows, rows_3c, rows_4c, vp;
};
Sizes sizes(const GptConfig& config, int capacity) {
  const size_t T = static_cast<size_t>(capacity), C = static_cast<size_t>(config.channels);
  return {ParamLayout(config, {0, config.num_layers}).size(), static_cast<size_t>(config.num_layers) * T * C,
          T * C, T, 3 * T * C, 4 * T * C, static_cast<size_t>(config.padded_vocab_size)};
}
int resolved_capacity(const GptConfig& config, int capacity) { return capacity == 0 ? config.max_seq_len : capacity; }

}  // namespace

size_t Generator::device_bytes(const GptConfig& config, int capacity) {
  const Sizes s = sizes(config, resolved_capacity(config, capacity));
  // params, two caches, five (T, C), mean and rstd, qkv, two (T, 4C), logits; tokens (int32)
  return sizeof(float) * (s.params + 2 * s.cache + 5 * s.rows_c + 2 * s.rows + s.rows_3c + 2 * s.rows_4c + s.vp) +
         sizeof(int32_t) * s.rows;
}

Generator::Generator(const GptConfig& config, kernels::Backend& backend, const float* host_params, int capacity)
    : config_(config),
      layout_(config, {0, config.num_layers}),
      backend_(backend),
      capacity_(resolved_capacity(config, capacity)) {
  assert(0 < capacity_ && capacity_ <= config.max_seq_len);
  const Sizes s = sizes(config, capacity_);
  params_ = kernels::DeviceBuffer<float>(backend, s.params);
  backend.copy_to_device(params_.data(), host_params, s.params * sizeof(float));
  k_cache_ = kernels::DeviceBuffer<float>(backend, s.cache);
  v_cache_ = kernels::DeviceBuffer<float>(backend, s.cache);
  tokens_ = kernels::DeviceBuffer<int32_t>(backend, s.rows);
  for (auto* b : {&x_, &y_, &ln_, &branch_, &atty_}) *b = kernels::DeviceBuffer<float>(backend, s.rows_c);
  mean_ = kernels::DeviceBuffer<float>(backend, s.rows);
  rstd_ = kernels::DeviceBuffer<float>(backend, s.rows);
  qkv_ = kernels::DeviceBuffer<float>(backend, s.rows_3c);
  fch_ = kernels::DeviceBuffer<float>(backend, s.rows_4c);
  fch_gelu_ = kernels::DeviceBuffer<float>(backend, s.rows_4c);
  logits_ = kernels::DeviceBuffer<float>(backend, s.vp);
  host_logits_.resize(s.vp);
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
  const size_t nC = static_cast<size_t>(n) * C;
  const size_t layer_cache = static_cast<size_t>(capacity_) * C;  // one layer's (NH, capacity, hs)
  const float* p = params_.data();
  const LayerOffsets& w = layout_.layer_offsets();
  backend_.copy_to_device(tokens_.data(), tokens, sizeof(int32_t) * n);
  // (n, C): the positions' rows of wpe start at T0.
  backend_.encoder_forward(x_.data(), tokens_.data(), p + layout_.wte(), p + layout_.wpe() + static_cast<size_t>(T0) * C,
                           1, n, C);
  for (int l = 0; l < config_.num_layers; l++) {
    const float* lp = p + layout_.layer(l);
    float* k = k_cache_.data() + layer_cache * l;
    float* v = v_cache_.data() + layer_cache * l;
    backend_.layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), lp + w.ln1_w, lp + w.ln1_b, n, C);
    backend_.matmul_forward(qkv_.data(), ln_.data(), lp + w.qkv_w, lp + w.qkv_b, n, C, 3 * C);  // (n, 3C)
    backend_.attention_decode(atty_.data(), k, v, qkv_.data(), 1, n, T0, capacity_, C, NH);
    backend_.matmul_forward(branch_.data(), atty_.data(), lp + w.attproj_w, lp + w.attproj_b, n, C, C);
    backend_.residual_forward(y_.data(), x_.data(), branch_.data(), nC);  // res2
    backend_.layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), y_.data(), lp + w.ln2_w, lp + w.ln2_b, n, C);
    backend_.matmul_forward(fch_.data(), ln_.data(), lp + w.fc_w, lp + w.fc_b, n, C, 4 * C);  // (n, 4C)
    backend_.gelu_forward(fch_gelu_.data(), fch_.data(), 4 * nC);
    backend_.matmul_forward(branch_.data(), fch_gelu_.data(), lp + w.fcproj_w, lp + w.fcproj_b, n, 4 * C, C);
    backend_.residual_forward(x_.data(), y_.data(), branch_.data(), nC);  // res3: the next layer's input
  }
  // The final layernorm and the tied head, on the last row only.
  const float* last = x_.data() + static_cast<size_t>(n - 1) * C;  // (1, C)
  backend_.layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), last, p + layout_.lnf_w(), p + layout_.lnf_b(), 1, C);
  backend_.matmul_forward(logits_.data(), ln_.data(), p + layout_.head_wte(), nullptr, 1, C, config_.padded_vocab_size);
  backend_.copy_to_host(host_logits_.data(), logits_.data(), sizeof(float) * host_logits_.size());  // waits
  position_ += n;
  return host_logits_;
}

}  // namespace eth

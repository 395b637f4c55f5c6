#include "lib/stage.hpp"

#include <algorithm>
#include <cassert>

namespace eth {

Stage::SlotLayout Stage::slot_layout(const GptConfig& config, LayerRange layers, int B, int T) {
  const size_t BT = static_cast<size_t>(B) * T;
  const size_t C = static_cast<size_t>(config.channels);
  const size_t NH = static_cast<size_t>(config.num_heads);
  SlotLayout slot{};
  size_t at = 0;
  auto take = [&at](size_t n) { size_t here = at; at += n; return here; };
  LayerActs& a = slot.layer;
  a.ln1 = take(BT * C);
  a.ln1_mean = take(BT);
  a.ln1_rstd = take(BT);
  a.qkv = take(BT * 3 * C);
  a.lse = take(BT * NH);
  a.atty = take(BT * C);
  a.res2 = take(BT * C);
  a.ln2 = take(BT * C);
  a.ln2_mean = take(BT);
  a.ln2_rstd = take(BT);
  a.fch = take(BT * 4 * C);
  a.fch_gelu = take(BT * 4 * C);
  a.res3 = take(BT * C);
  a.size = at;

  at = 0;
  slot.input = take(BT * C);
  slot.layers = take(a.size * static_cast<size_t>(layers.count()));
  if (layers.end == config.num_layers) {
    slot.lnf = take(BT * C);
    slot.lnf_mean = take(BT);
    slot.lnf_rstd = take(BT);
  }
  slot.size = at;
  return slot;
}

Stage::ActivationFootprint Stage::activation_footprint(const GptConfig& config, LayerRange layers, int B, int T) {
  const size_t BT = static_cast<size_t>(B) * T;
  const size_t C = static_cast<size_t>(config.channels);
  const size_t logits = layers.end == config.num_layers ? BT * static_cast<size_t>(config.padded_vocab_size) : 0;
  // branch, dresidual, dbtc (C each), dqkv (3C), dfch (4C), logits
  const size_t scratch = BT * 10 * C + logits;
  return {slot_layout(config, layers, B, T).size, scratch};
}

Stage::Stage(const GptConfig& config, LayerRange layers, int B, int T, int slots,
             kernels::Backend& backend)
    : config_(config),
      layout_(config, layers),
      B_(B),
      T_(T),
      slots_(slots),
      rows_(static_cast<size_t>(slots), B),
      backend_(backend),
      slot_(slot_layout(config, layers, B, T)) {
  assert(B > 0 && T > 0 && T <= config.max_seq_len && slots > 0);
  const size_t BT = static_cast<size_t>(B) * T;
  const size_t C = static_cast<size_t>(config.channels);
  const size_t Vp = static_cast<size_t>(config.padded_vocab_size);

  params_ = kernels::DeviceBuffer<float>(backend, layout_.size());
  grads_ = kernels::DeviceBuffer<float>(backend, layout_.size());
  activations_ = kernels::DeviceBuffer<float>(backend, slot_.size * static_cast<size_t>(slots));
  if (layout_.has_embedding()) {
    tokens_ = kernels::DeviceBuffer<int32_t>(backend, BT * slots);
    tokens_upload_ = kernels::DeviceBuffer<int32_t>(backend, BT * slots, kernels::Memory::pinned);
    for (int i = 0; i < slots; i++) tokens_uploaded_.emplace_back(backend);
  }
  if (layout_.has_head()) {
    targets_ = kernels::DeviceBuffer<int32_t>(backend, BT);
    targets_upload_ = kernels::DeviceBuffer<int32_t>(backend, BT, kernels::Memory::pinned);
    targets_uploaded_ = kernels::Event(backend);
    logits_ = kernels::DeviceBuffer<float>(backend, BT * Vp);
    sample_losses_ = kernels::DeviceBuffer<float>(backend, static_cast<size_t>(B));
    loss_sum_ = kernels::DeviceBuffer<double>(backend, 1);
    const double zero = 0.0;
    backend.copy_to_device(loss_sum_.data(), &zero, sizeof(double));
  }
  branch_ = kernels::DeviceBuffer<float>(backend, BT * C);
  dresidual_ = kernels::DeviceBuffer<float>(backend, BT * C);
  dbtc_ = kernels::DeviceBuffer<float>(backend, BT * C);
  dqkv_ = kernels::DeviceBuffer<float>(backend, BT * 3 * C);
  dfch_ = kernels::DeviceBuffer<float>(backend, BT * 4 * C);
  zero_grads();
}

void Stage::zero_grads() { backend_.fill_zero(grads_.data(), grads_.size()); }

float* Stage::slot_base(int slot) {
  assert(0 <= slot && slot < slots_);
  return activations_.data() + slot_.size * static_cast<size_t>(slot);
}

const float* Stage::layer_input(float* slot, int local_layer) {
  if (local_layer == 0) return slot + slot_.input;
  return slot + slot_.layers + acts_.size * static_cast<size_t>(local_layer - 1) + acts_.res3;
}

const float* Stage::output(int slot) const {
  const int n = layout_.layers().end - layout_.layers().begin;
  return activations_.data() + slot_.size * static_cast<size_t>(slot) + slot_.layers +
         acts_.size * static_cast<size_t>(n - 1) + acts_.res3;
}

void Stage::forward(int slot, const int32_t* host_tokens, const float* input, int rows) {
  if (rows == 0) rows = B_;
  assert(0 < rows && rows <= B_);
  rows_[slot] = rows;
  const int B = rows, T = T_, C = config_.channels, NH = config_.num_heads;
  const int N = B * T;
  const size_t BTC = static_cast<size_t>(N) * C;
  float* s = slot_base(slot);
  float* p = params_.data();

  if (layout_.has_embedding()) {
    const size_t capacity = static_cast<size_t>(B_) * T;  // a slot's tokens
    int32_t* tokens = tokens_.data() + capacity * slot;
    int32_t* upload = tokens_upload_.data() + capacity * slot;
    tokens_uploaded_[slot].wait();  // the slot's previous upload has read the pinned buffer
    std::copy(host_tokens, host_tokens + N, upload);
    backend_.copy_to_device_async(tokens, upload, sizeof(int32_t) * N);
    tokens_uploaded_[slot].record();
    backend_.encoder_forward(s + slot_.input, tokens, p + layout_.wte(), p + layout_.wpe(), B, T, C);
  } else if (input != s + slot_.input) {
    backend_.copy(s + slot_.input, input, sizeof(float) * BTC);
  }

  const LayerOffsets& w = layout_.layer_offsets();
  const LayerRange range = layout_.layers();
  for (int l = range.begin; l < range.end; l++) {
    const int i = l - range.begin;
    const float* x = layer_input(s, i);                                         // (B, T, C)
    float* a = s + slot_.layers + acts_.size * static_cast<size_t>(i);
    const float* lp = p + layout_.layer(l);
    backend_.layernorm_forward(a + acts_.ln1, a + acts_.ln1_mean, a + acts_.ln1_rstd, x,
                               lp + w.ln1_w, lp + w.ln1_b, N, C);
    backend_.matmul_forward(a + acts_.qkv, a + acts_.ln1, lp + w.qkv_w, lp + w.qkv_b, N, C, 3 * C);
    backend_.attention_forward(a + acts_.atty, a + acts_.lse, a + acts_.qkv, B, T, C, NH);
    backend_.matmul_forward(branch_.data(), a + acts_.atty, lp + w.attproj_w, lp + w.attproj_b, N, C, C);
    backend_.residual_forward(a + acts_.res2, x, branch_.data(), BTC);
    backend_.layernorm_forward(a + acts_.ln2, a + acts_.ln2_mean, a + acts_.ln2_rstd, a + acts_.res2,
                               lp + w.ln2_w, lp + w.ln2_b, N, C);
    backend_.matmul_forward(a + acts_.fch, a + acts_.ln2, lp + w.fc_w, lp + w.fc_b, N, C, 4 * C);
    backend_.gelu_forward(a + acts_.fch_gelu, a + acts_.fch, BTC * 4);
    backend_.matmul_forward(branch_.data(), a + acts_.fch_gelu, lp + w.fcproj_w, lp + w.fcproj_b, N, 4 * C, C);
    backend_.residual_forward(a + acts_.res3, a + acts_.res2, branch_.data(), BTC);
  }

  if (layout_.has_head()) {
    backend_.layernorm_forward(s + slot_.lnf, s + slot_.lnf_mean, s + slot_.lnf_rstd, output(slot),
                               p + layout_.lnf_w(), p + layout_.lnf_b(), N, C);
  }
}

void Stage::loss(int slot, const int32_t* host_targets, bool with_grad, int counted_rows) {
  assert(layout_.has_head());
  const int B = rows_[slot], T = T_, C = config_.channels;
  const int N = B * T;
  float* s = slot_base(slot);
  targets_uploaded_.wait();  // the previous upload has read the pinned buffer
  std::copy(host_targets, host_targets + N, targets_upload_.data());
  backend_.copy_to_device_async(targets_.data(), targets_upload_.data(), sizeof(int32_t) * N);
  targets_uploaded_.record();
  backend_.matmul_forward(logits_.data(), s + slot_.lnf, params_.data() + layout_.head_wte(), nullptr,
                          N, C, config_.padded_vocab_size);
  backend_.crossentropy_forward_backward(sample_losses_.data(), logits_.data(), targets_.data(), B, T,
                                         config_.vocab_size, config_.padded_vocab_size,
                                         with_grad ? 1.0f : 0.0f);
  const int counted = counted_rows < 0 ? B : std::min(counted_rows, B);
  if (counted > 0) backend_.accumulate_sum(loss_sum_.data(), sample_losses_.data(), static_cast<size_t>(counted));
}

double Stage::take_loss_sum() {
  assert(layout_.has_head());
  double sum = 0.0;
  const double zero = 0.0;
  backend_.copy_to_host(&sum, loss_sum_.data(), sizeof(double));
  backend_.copy_to_device(loss_sum_.data(), &zero, sizeof(double));
  return sum;
}

void Stage::backward(int slot, const float* doutput, const std::function<void(int unit)>& on_unit_done,
                     KeptEmbeddingRows keep) {
  auto done = [&on_unit_done](int unit) {
    if (on_unit_done) on_unit_done(unit);
  };
  const int B = rows_[slot], T = T_, C = config_.channels, NH = config_.num_heads;
  const int N = B * T;
  const size_t BTC = static_cast<size_t>(N) * C;
  float* s = slot_base(slot);
  const float* p = params_.data();
  float* g = grads_.data();
  float* dres = dresidual_.data();  // (B, T, C): gradient of the residual stream, flowing down

  if (layout_.has_head()) {
    // logits holds dlogits, left by loss(slot, targets, true).
    backend_.matmul_backward(dbtc_.data(), g + layout_.head_wte(), nullptr, logits_.data(),
                             s + slot_.lnf, p + layout_.head_wte(), N, C, config_.padded_vocab_size);
    backend_.fill_zero(dres, BTC);
    backend_.layernorm_backward(dres, g + layout_.lnf_w(), g + layout_.lnf_b(), dbtc_.data(),
                                output(slot), p + layout_.lnf_w(), s + slot_.lnf_mean,
                                s + slot_.lnf_rstd, N, C);
    done(config_.num_layers + 1);
  } else {
    backend_.copy(dres, doutput, sizeof(float) * BTC);
  }

  const LayerOffsets& w = layout_.layer_offsets();
  const LayerRange range = layout_.layers();
  for (int l = range.end - 1; l >= range.begin; l--) {
    const int i = l - range.begin;
    const float* x = layer_input(s, i);
    const float* a = s + slot_.layers + acts_.size * static_cast<size_t>(i);
    const float* lp = p + layout_.layer(l);
    float* lg = g + layout_.layer(l);
    // res3 = res2 + fcproj(gelu(fc(ln2(res2)))): dres flows through both paths.
    backend_.matmul_backward(dfch_.data(), lg + w.fcproj_w, lg + w.fcproj_b, dres, a + acts_.fch_gelu,
                             lp + w.fcproj_w, N, 4 * C, C);
    backend_.gelu_backward(dfch_.data(), a + acts_.fch, dfch_.data(), BTC * 4);
    backend_.matmul_backward(dbtc_.data(), lg + w.fc_w, lg + w.fc_b, dfch_.data(), a + acts_.ln2,
                             lp + w.fc_w, N, C, 4 * C);
    backend_.layernorm_backward(dres, lg + w.ln2_w, lg + w.ln2_b, dbtc_.data(), a + acts_.res2,
                                lp + w.ln2_w, a + acts_.ln2_mean, a + acts_.ln2_rstd, N, C);
    // res2 = x + attproj(attention(qkv(ln1(x)))).
    backend_.matmul_backward(dbtc_.data(), lg + w.attproj_w, lg + w.attproj_b, dres, a + acts_.atty,
                             lp + w.attproj_w, N, C, C);
    backend_.attention_backward(dqkv_.data(), dbtc_.data(), a + acts_.qkv, a + acts_.atty, a + acts_.lse,
                                B, T, C, NH);
    backend_.matmul_backward(dbtc_.data(), lg + w.qkv_w, lg + w.qkv_b, dqkv_.data(), a + acts_.ln1,
                             lp + w.qkv_w, N, C, 3 * C);
    backend_.layernorm_backward(dres, lg + w.ln1_w, lg + w.ln1_b, dbtc_.data(), x, lp + w.ln1_w,
                                a + acts_.ln1_mean, a + acts_.ln1_rstd, N, C);
    done(l + 1);
  }

  if (layout_.has_embedding()) {
    const int32_t* tokens = tokens_.data() + static_cast<size_t>(B_) * T * slot;
    if (keep.rows) {
      backend_.copy(keep.rows, dres, sizeof(float) * BTC);
      backend_.copy(keep.ids, tokens, sizeof(int32_t) * N);
    }
    backend_.encoder_backward(keep.rows ? nullptr : g + layout_.wte(), g + layout_.wpe(), dres, tokens, B, T, C);
    done(0);
  }
}

}  // namespace eth

#include "lib/model/stage.hpp"

#include <algorithm>
#include <cassert>

namespace eth {

Stage::ActLayout Stage::act_layout(const GptConfig& config, LayerRange layers, int B, int T,
                                   kernels::AttentionPath attention, Recompute recompute) {
  const size_t BT = static_cast<size_t>(B) * T;
  const size_t C = static_cast<size_t>(config.channels);
  const size_t NH = static_cast<size_t>(config.num_heads);
  const size_t n = static_cast<size_t>(layers.count());
  const bool last = layers.end == config.num_layers, full = recompute == Recompute::full;
  const size_t saved = kernels::attention_saved_floats(attention, static_cast<size_t>(B), NH, static_cast<size_t>(T));
  const std::array<size_t, kActs> floats = {BT * C, BT, BT, BT * 3 * C, saved, BT * C,
                                            BT * C, BT * C, BT, BT, BT * 4 * C, BT * 4 * C, BT * C};
  auto kept = [recompute](int t) { return recompute == Recompute::none || (recompute == Recompute::selective && t > atty); };
  // One layer's record in the slot and in the shared set: the tensors each holds, packed.
  ActLayout out{};
  size_t slot_record = 0, shared_record = 0;
  for (int t = 0; t < kActs; t++) {
    size_t& record = kept(t) ? slot_record : shared_record;
    out.layer[t] = {!kept(t), record, 0};
    record += floats[t];
  }
  // The slot: input, its layers' records, then the output (full) or the final layernorm (last
  // stage). The shared set: every layer's record (full) or one (selective), then the final
  // layernorm (full, last stage).
  size_t slot_at = 0, shared_at = 0;
  auto take = [](size_t& at, size_t n_floats) { size_t here = at; at += n_floats; return here; };
  out.input = take(slot_at, BT * C);
  const size_t slot_layers = take(slot_at, slot_record * n);
  const size_t shared_layers = take(shared_at, shared_record * (full ? n : 1));
  for (Place& p : out.layer) {
    p.stride = p.shared ? (full ? shared_record : 0) : slot_record;
    p.offset += p.shared ? shared_layers : slot_layers;
  }
  if (full) out.output = take(slot_at, BT * C);
  if (last) {
    size_t& at = full ? shared_at : slot_at;
    out.lnf = {full, take(at, BT * C), 0};
    out.lnf_mean = {full, take(at, BT), 0};
    out.lnf_rstd = {full, take(at, BT), 0};
  }
  out.slot_size = slot_at;
  out.shared_size = shared_at;
  return out;
}

Stage::ActivationFootprint Stage::activation_footprint(const GptConfig& config, LayerRange layers, int B, int T,
                                                       kernels::AttentionPath attention, Recompute recompute) {
  const size_t BT = static_cast<size_t>(B) * T;
  const size_t C = static_cast<size_t>(config.channels);
  const bool last = layers.end == config.num_layers;
  // The last stage's logits, per-sample losses (B) and loss sum (a double: 2 floats).
  const size_t head = last ? BT * static_cast<size_t>(config.padded_vocab_size) + B + 2 : 0;
  const ActLayout acts = act_layout(config, layers, B, T, attention, recompute);
  // branch, dresidual, dbtc (C each), dqkv (3C), dfch (4C), the head's, the shared recomputed set
  const size_t scratch = BT * 10 * C + head + acts.shared_size;
  return {acts.slot_size, scratch};
}

Stage::Stage(const GptConfig& config, LayerRange layers, int B, int T, int slots,
             kernels::Backend& backend, Recompute recompute)
    : config_(config),
      layout_(config, layers),
      B_(B),
      T_(T),
      slots_(slots),
      rows_(static_cast<size_t>(slots), B),
      backend_(backend),
      recompute_(recompute),
      acts_(act_layout(config, layers, B, T, backend.attention_path(T), recompute)) {
  assert(B > 0 && T > 0 && T <= config.max_seq_len && slots > 0);
  const size_t BT = static_cast<size_t>(B) * T;
  const size_t C = static_cast<size_t>(config.channels);
  const size_t Vp = static_cast<size_t>(config.padded_vocab_size);

  params_ = kernels::DeviceBuffer<float>(backend, layout_.size());
  grads_ = kernels::DeviceBuffer<float>(backend, layout_.size());
  activations_ = kernels::DeviceBuffer<float>(backend, acts_.slot_size * static_cast<size_t>(slots));
  if (acts_.shared_size > 0) shared_ = kernels::DeviceBuffer<float>(backend, acts_.shared_size);
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
  return activations_.data() + acts_.slot_size * static_cast<size_t>(slot);
}

float* Stage::at(int slot, Place place, int local_layer) {
  return (place.shared ? shared_.data() : slot_base(slot)) + place.offset + place.stride * static_cast<size_t>(local_layer);
}

Stage::LayerActs Stage::layer_acts(int slot, int local_layer) {
  LayerActs a;
  for (int t = 0; t < kActs; t++) a[t] = at(slot, acts_.layer[t], local_layer);
  return a;
}

const float* Stage::layer_input(int slot, int local_layer) {
  if (local_layer == 0) return slot_base(slot) + acts_.input;
  return at(slot, acts_.layer[res3], local_layer - 1);
}

const float* Stage::output(int slot) const {
  const float* s = activations_.data() + acts_.slot_size * static_cast<size_t>(slot);
  if (recompute_ == Recompute::full) return s + acts_.output;
  const Place last = acts_.layer[res3];  // kept in the slot unless full
  return s + last.offset + last.stride * static_cast<size_t>(layout_.layers().count() - 1);
}

void Stage::forward(int slot, const int32_t* host_tokens, const float* input, int rows) {
  if (rows == 0) rows = B_;
  assert(0 < rows && rows <= B_);
  rows_[slot] = rows;
  const int B = rows, T = T_, C = config_.channels;
  const size_t BTC = static_cast<size_t>(B) * T * C;
  float* s = slot_base(slot);
  float* p = params_.data();

  if (layout_.has_embedding()) {
    const size_t capacity = static_cast<size_t>(B_) * T;  // a slot's tokens
    int32_t* tokens = tokens_.data() + capacity * slot;
    int32_t* upload = tokens_upload_.data() + capacity * slot;
    tokens_uploaded_[slot].wait();  // the slot's previous upload has read the pinned buffer
    std::copy(host_tokens, host_tokens + B * T, upload);
    backend_.copy_to_device_async(tokens, upload, sizeof(int32_t) * B * T);
    tokens_uploaded_[slot].record();
    backend_.encoder_forward(s + acts_.input, tokens, p + layout_.wte(), p + layout_.wpe(), B, T, C);
  } else if (input != s + acts_.input) {
    backend_.copy(s + acts_.input, input, sizeof(float) * BTC);
  }
  layers_forward(slot);
  if (recompute_ == Recompute::full) {
    // The output leaves the shared set, which the next backward's recomputation overwrites
    // while a send may still read the output.
    backend_.copy(s + acts_.output, layer_acts(slot, layout_.layers().count() - 1)[res3], sizeof(float) * BTC);
    shared_holds_ = slot;
  }
}

void Stage::attention_half_forward(int slot, int i) {
  const int B = rows_[slot], T = T_, C = config_.channels, NH = config_.num_heads;
  const int N = B * T;
  const float* lp = params_.data() + layout_.layer(layout_.layers().begin + i);
  const LayerOffsets& w = layout_.layer_offsets();
  const LayerActs a = layer_acts(slot, i);
  backend_.layernorm_forward(a[ln1], a[ln1_mean], a[ln1_rstd], layer_input(slot, i), lp + w.ln1_w, lp + w.ln1_b, N, C);
  backend_.matmul_forward(a[qkv], a[ln1], lp + w.qkv_w, lp + w.qkv_b, N, C, 3 * C);
  backend_.attention_forward(a[atty], a[att_saved], a[qkv], B, T, C, NH);
}

void Stage::layers_forward(int slot) {
  const int B = rows_[slot], T = T_, C = config_.channels;
  const int N = B * T;
  const size_t BTC = static_cast<size_t>(N) * C;
  const float* p = params_.data();
  const LayerOffsets& w = layout_.layer_offsets();
  const LayerRange range = layout_.layers();
  for (int l = range.begin; l < range.end; l++) {
    const int i = l - range.begin;
    const float* x = layer_input(slot, i);  // (B, T, C)
    const LayerActs a = layer_acts(slot, i);
    const float* lp = p + layout_.layer(l);
    attention_half_forward(slot, i);
    backend_.matmul_forward(branch_.data(), a[atty], lp + w.attproj_w, lp + w.attproj_b, N, C, C);
    backend_.residual_forward(a[res2], x, branch_.data(), BTC);
    backend_.layernorm_forward(a[ln2], a[ln2_mean], a[ln2_rstd], a[res2], lp + w.ln2_w, lp + w.ln2_b, N, C);
    backend_.matmul_forward(a[fch], a[ln2], lp + w.fc_w, lp + w.fc_b, N, C, 4 * C);
    backend_.gelu_forward(a[fch_gelu], a[fch], BTC * 4);
    backend_.matmul_forward(branch_.data(), a[fch_gelu], lp + w.fcproj_w, lp + w.fcproj_b, N, 4 * C, C);
    backend_.residual_forward(a[res3], a[res2], branch_.data(), BTC);
  }
  if (layout_.has_head()) {
    const float* last = layer_acts(slot, range.count() - 1)[res3];  // the output, before it is copied out (full)
    backend_.layernorm_forward(at(slot, acts_.lnf), at(slot, acts_.lnf_mean), at(slot, acts_.lnf_rstd), last,
                               p + layout_.lnf_w(), p + layout_.lnf_b(), N, C);
  }
}

void Stage::loss(int slot, const int32_t* host_targets, bool with_grad, int counted_rows) {
  assert(layout_.has_head());
  const int B = rows_[slot], T = T_, C = config_.channels;
  const int N = B * T;
  targets_uploaded_.wait();  // the previous upload has read the pinned buffer
  std::copy(host_targets, host_targets + N, targets_upload_.data());
  backend_.copy_to_device_async(targets_.data(), targets_upload_.data(), sizeof(int32_t) * N);
  targets_uploaded_.record();
  backend_.matmul_forward(logits_.data(), at(slot, acts_.lnf), params_.data() + layout_.head_wte(), nullptr,
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
  const float* p = params_.data();
  float* g = grads_.data();
  float* dres = dresidual_.data();  // (B, T, C): gradient of the residual stream, flowing down

  if (recompute_ == Recompute::full && shared_holds_ != slot) {
    layers_forward(slot);  // the same kernels on the same input: the same activations, bit for bit
    shared_holds_ = slot;
  }
  if (layout_.has_head()) {
    // logits holds dlogits, left by loss(slot, targets, true).
    backend_.matmul_backward(dbtc_.data(), g + layout_.head_wte(), nullptr, logits_.data(),
                             at(slot, acts_.lnf), p + layout_.head_wte(), N, C, config_.padded_vocab_size);
    backend_.fill_zero(dres, BTC);
    backend_.layernorm_backward(dres, g + layout_.lnf_w(), g + layout_.lnf_b(), dbtc_.data(),
                                output(slot), p + layout_.lnf_w(), at(slot, acts_.lnf_mean),
                                at(slot, acts_.lnf_rstd), N, C);
    done(config_.num_layers + 1);
  } else {
    backend_.copy(dres, doutput, sizeof(float) * BTC);
  }

  const LayerOffsets& w = layout_.layer_offsets();
  const LayerRange range = layout_.layers();
  for (int l = range.end - 1; l >= range.begin; l--) {
    const int i = l - range.begin;
    const float* x = layer_input(slot, i);
    const LayerActs a = layer_acts(slot, i);
    const float* lp = p + layout_.layer(l);
    float* lg = g + layout_.layer(l);
    // res3 = res2 + fcproj(gelu(fc(ln2(res2)))): dres flows through both paths.
    backend_.matmul_backward(dfch_.data(), lg + w.fcproj_w, lg + w.fcproj_b, dres, a[fch_gelu],
                             lp + w.fcproj_w, N, 4 * C, C);
    backend_.gelu_backward(dfch_.data(), a[fch], dfch_.data(), BTC * 4);
    backend_.matmul_backward(dbtc_.data(), lg + w.fc_w, lg + w.fc_b, dfch_.data(), a[ln2], lp + w.fc_w, N, C, 4 * C);
    backend_.layernorm_backward(dres, lg + w.ln2_w, lg + w.ln2_b, dbtc_.data(), a[res2], lp + w.ln2_w,
                                a[ln2_mean], a[ln2_rstd], N, C);
    // res2 = x + attproj(attention(qkv(ln1(x)))); selective recomputes that half's activations.
    if (recompute_ == Recompute::selective) attention_half_forward(slot, i);
    backend_.matmul_backward(dbtc_.data(), lg + w.attproj_w, lg + w.attproj_b, dres, a[atty], lp + w.attproj_w,
                             N, C, C);
    backend_.attention_backward(dqkv_.data(), dbtc_.data(), a[qkv], a[atty], a[att_saved], B, T, C, NH);
    backend_.matmul_backward(dbtc_.data(), lg + w.qkv_w, lg + w.qkv_b, dqkv_.data(), a[ln1], lp + w.qkv_w,
                             N, C, 3 * C);
    backend_.layernorm_backward(dres, lg + w.ln1_w, lg + w.ln1_b, dbtc_.data(), x, lp + w.ln1_w, a[ln1_mean],
                                a[ln1_rstd], N, C);
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

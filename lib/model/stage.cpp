#include "lib/model/stage.hpp"

#include <algorithm>
#include <cassert>
#include <optional>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/model/block_forward.hpp"
#include "lib/model/model_tensors.hpp"
#include "lib/model/rotary.hpp"

namespace eth {

Stage::ActLayout Stage::act_layout(const ModelConfig& config, LayerRange layers, int B, int T,
                                   kernels::AttentionPath attention, kernels::ElementType storage,
                                   Recompute recompute) {
  using kernels::ElementType;
  const size_t BT = static_cast<size_t>(B) * T;
  const size_t C = static_cast<size_t>(config.channels);
  const size_t NH = static_cast<size_t>(config.num_heads);
  const size_t n = static_cast<size_t>(layers.count());
  const bool last = layers.end == config.num_layers, full = recompute == Recompute::full;
  const size_t saved = kernels::attention_saved_floats(attention, static_cast<size_t>(B), NH, static_cast<size_t>(T));
  const LayerWidths W = layer_widths(config);
  const size_t mean = config.norm == NormKind::layernorm ? BT : 0;  // RMSNorm keeps rstd alone
  const std::array<size_t, kActs> elements = {BT * C, mean, BT, BT * W.qkv, saved, BT * W.atty,
                                              BT * C, BT * C, mean, BT, BT * W.fc, BT * W.fc_act, BT * C};
  auto type_of = [storage](int t) {
    const bool statistic = t == ln1_mean || t == ln1_rstd || t == att_saved || t == ln2_mean || t == ln2_rstd;
    return statistic ? ElementType::f32 : storage;
  };
  // Every tensor starts on a 16-byte boundary: the GPU kernels' vector loads (and cp.async) need it.
  auto bytes = [](size_t count, ElementType type) { return (count * kernels::element_bytes(type) + 15) / 16 * 16; };
  auto kept = [recompute](int t) { return recompute == Recompute::none || (recompute == Recompute::selective && t > atty); };
  // One layer's record in the slot and in the shared set: the tensors each holds, packed.
  ActLayout out{};
  size_t slot_record = 0, shared_record = 0;
  for (int t = 0; t < kActs; t++) {
    size_t& record = kept(t) ? slot_record : shared_record;
    out.layer[t] = {!kept(t), record, 0, type_of(t)};
    record += bytes(elements[t], type_of(t));
  }
  // The slot: input, its layers' records, then the output (full) or the final layernorm (last
  // stage). The shared set: every layer's record (full) or one (selective), then the final
  // layernorm (full, last stage).
  size_t slot_at = 0, shared_at = 0;
  auto take = [](size_t& at, size_t n_bytes) { size_t here = at; at += n_bytes; return here; };
  out.input = {false, take(slot_at, bytes(BT * C, storage)), 0, storage};
  const size_t slot_layers = take(slot_at, slot_record * n);
  const size_t shared_layers = take(shared_at, shared_record * (full ? n : 1));
  for (Place& p : out.layer) {
    p.stride = p.shared ? (full ? shared_record : 0) : slot_record;
    p.offset += p.shared ? shared_layers : slot_layers;
  }
  if (full) out.output = {false, take(slot_at, bytes(BT * C, storage)), 0, storage};
  if (last) {
    size_t& at = full ? shared_at : slot_at;
    out.lnf = {full, take(at, bytes(BT * C, storage)), 0, storage};
    out.lnf_mean = {full, take(at, bytes(mean, ElementType::f32)), 0, ElementType::f32};
    out.lnf_rstd = {full, take(at, bytes(BT, ElementType::f32)), 0, ElementType::f32};
  }
  out.slot_size = slot_at;
  out.shared_size = shared_at;
  return out;
}

void Stage::check_computes(const ModelConfig& c, const std::string& where) {
  if (c.norm == NormKind::layernorm && c.norm_eps != 1e-5)
    fail_input(where, "norm_eps",
               "1e-05 with layernorm (GPT-2's, which ETH's layernorm kernels hold; RMSNorm takes any)",
               strprintf("%g", c.norm_eps));
}

Stage::ActivationFootprint Stage::activation_footprint(const ModelConfig& config, LayerRange layers, int B, int T,
                                                       kernels::AttentionPath attention, kernels::ElementType storage,
                                                       Recompute recompute) {
  const size_t BT = static_cast<size_t>(B) * T;
  const size_t C = static_cast<size_t>(config.channels);
  const size_t e = kernels::element_bytes(storage);
  const bool last = layers.end == config.num_layers;
  // The last stage's logits of a chunk (storage type), per-sample losses (B floats) and loss sum
  // (a double).
  const size_t chunk = static_cast<size_t>(head_samples(config, B)) * T;
  const size_t head = last ? chunk * static_cast<size_t>(config.padded_vocab_size) * e + 4 * B + 8 : 0;
  const ActLayout acts = act_layout(config, layers, B, T, attention, storage, recompute);
  // branch and dresidual (C each), dbtc (C or NH hs), dqkv, dfch, SwiGLU's dfch_act, the head's,
  // the shared recomputed set, the rotary table
  const LayerWidths W = layer_widths(config);
  const size_t dact = config.mlp == MlpKind::swiglu ? W.fc_act : 0;
  const size_t scratch = BT * (2 * C + std::max(C, W.atty) + W.qkv + W.fc + dact) * e + head + acts.shared_size +
                         sizeof(float) * rotary_table_floats(config);
  return {acts.slot_size, scratch};
}

Stage::Stage(const ModelConfig& config, LayerRange layers, int B, int T, int slots,
             kernels::Backend& backend, Recompute recompute)
    : config_(config),
      layout_(config, layers),
      B_(B),
      T_(T),
      slots_(slots),
      rows_(static_cast<size_t>(slots), B),
      backend_(backend),
      storage_(backend.storage()),
      recompute_(recompute),
      head_samples_(head_samples(config, B)),
      acts_(act_layout(config, layers, B, T, backend.attention_path(T), storage_, recompute)) {
  assert(B > 0 && T > 0 && T <= config.max_seq_len && slots > 0);
  const size_t BT = static_cast<size_t>(B) * T;
  const size_t C = static_cast<size_t>(config.channels);
  const size_t Vp = static_cast<size_t>(config.padded_vocab_size);
  const size_t e = kernels::element_bytes(storage_);

  params_ = kernels::DeviceBuffer<float>(backend, layout_.size());
  grads_ = kernels::DeviceBuffer<float>(backend, layout_.size());
  if (storage_ != kernels::ElementType::f32) {
    param_copies_ = kernels::DeviceBuffer<uint16_t>(backend, layout_.size());
    const uint16_t nan = storage_ == kernels::ElementType::bf16 ? 0x7FC0 : 0x7E00;  // a quiet NaN of each
    backend.copy_to_device(param_copies_.data(), std::vector<uint16_t>(layout_.size(), nan).data(),
                           layout_.size() * sizeof(uint16_t));
  }
  activations_ = kernels::DeviceBuffer<std::byte>(backend, acts_.slot_size * static_cast<size_t>(slots));
  if (acts_.shared_size > 0) shared_ = kernels::DeviceBuffer<std::byte>(backend, acts_.shared_size);
  if (layout_.has_embedding()) {
    tokens_ = kernels::DeviceBuffer<int32_t>(backend, BT * slots);
    tokens_upload_ = kernels::DeviceBuffer<int32_t>(backend, BT * slots, kernels::Memory::pinned);
    for (int i = 0; i < slots; i++) tokens_uploaded_.emplace_back(backend);
  }
  if (layout_.has_head()) {
    targets_ = kernels::DeviceBuffer<int32_t>(backend, BT);
    targets_upload_ = kernels::DeviceBuffer<int32_t>(backend, BT, kernels::Memory::pinned);
    targets_uploaded_ = kernels::Event(backend);
    logits_ = kernels::DeviceBuffer<std::byte>(backend, static_cast<size_t>(head_samples_) * T * Vp * e);
    sample_losses_ = kernels::DeviceBuffer<float>(backend, static_cast<size_t>(B));
    loss_sum_ = kernels::DeviceBuffer<double>(backend, 1);
    const double zero = 0.0;
    backend.copy_to_device(loss_sum_.data(), &zero, sizeof(double));
  }
  branch_ = kernels::DeviceBuffer<std::byte>(backend, BT * C * e);
  dresidual_ = kernels::DeviceBuffer<std::byte>(backend, BT * C * e);
  const LayerWidths W = layer_widths(config);
  dbtc_ = kernels::DeviceBuffer<std::byte>(backend, BT * std::max(C, W.atty) * e);
  dqkv_ = kernels::DeviceBuffer<std::byte>(backend, BT * W.qkv * e);
  dfch_ = kernels::DeviceBuffer<std::byte>(backend, BT * W.fc * e);
  if (config.mlp == MlpKind::swiglu) dfch_act_ = kernels::DeviceBuffer<std::byte>(backend, BT * W.fc_act * e);
  if (config.positions == PositionKind::rotary) {
    const std::vector<float> inv_freq = rotary_inverse_frequencies(config);
    inv_freq_ = kernels::DeviceBuffer<float>(backend, inv_freq.size());
    backend.copy_to_device(inv_freq_.data(), inv_freq.data(), inv_freq.size() * sizeof(float));
  }
  zero_grads();
}

void Stage::zero_grads() { backend_.fill_zero(grads_.data(), grads_.size()); }

void Stage::params_written() { params_written({0, layout_.size()}); }

void Stage::params_written(FloatRange range) {
  if (storage_ == kernels::ElementType::f32 || range.size == 0) return;
  backend_.convert(param_copies() + range.offset, params_.data() + range.offset, range.size);
}

kernels::Tensor Stage::param_copies() {
  if (storage_ == kernels::ElementType::f32) return nullptr;
  return {param_copies_.data(), storage_};
}

kernels::ConstTensor Stage::weights() const {
  if (storage_ != kernels::ElementType::f32) return {param_copies_.data(), storage_};
  return params_.data();
}

kernels::Tensor Stage::slot_tensor(int slot, Place place, int local_layer) {
  assert(0 <= slot && slot < slots_ && !place.shared);
  return at(slot, place, local_layer);
}

kernels::Tensor Stage::at(int slot, Place place, int local_layer) {
  assert(0 <= slot && slot < slots_);
  std::byte* base = place.shared ? shared_.data() : activations_.data() + acts_.slot_size * static_cast<size_t>(slot);
  return {base + place.offset + place.stride * static_cast<size_t>(local_layer), place.type};
}

Stage::LayerActs Stage::layer_acts(int slot, int local_layer) {
  LayerActs a;
  for (int t = 0; t < kActs; t++) a[t] = at(slot, acts_.layer[t], local_layer);
  return a;
}

kernels::ConstTensor Stage::layer_input(int slot, int local_layer) {
  if (local_layer == 0) return slot_tensor(slot, acts_.input);
  return at(slot, acts_.layer[res3], local_layer - 1);
}

kernels::Tensor Stage::output(int slot) {
  if (recompute_ == Recompute::full) return slot_tensor(slot, acts_.output);
  return at(slot, acts_.layer[res3], layout_.layers().count() - 1);  // kept in the slot unless full
}

void Stage::forward(int slot, const int32_t* host_tokens, kernels::ConstTensor input, int rows) {
  if (rows == 0) rows = B_;
  assert(0 < rows && rows <= B_);
  rows_[slot] = rows;
  const int B = rows, T = T_, C = config_.channels;
  const size_t BTC = static_cast<size_t>(B) * T * C;
  const kernels::Tensor in = input_buffer(slot);

  if (layout_.has_embedding()) {
    const size_t capacity = static_cast<size_t>(B_) * T;  // a slot's tokens
    int32_t* tokens = tokens_.data() + capacity * slot;
    int32_t* upload = tokens_upload_.data() + capacity * slot;
    tokens_uploaded_[slot].wait();  // the slot's previous upload has read the pinned buffer
    std::copy(host_tokens, host_tokens + B * T, upload);
    backend_.copy_to_device_async(tokens, upload, sizeof(int32_t) * B * T);
    tokens_uploaded_[slot].record();
    // The embedding reads the fp32 masters (the bf16 path rounds the rows it reads, which only the
    // device knows: the fp32-compute path could not widen them from the copies).
    const float* positions = learned_positions() ? params_.data() + layout_.wpe() : nullptr;
    backend_.encoder_forward(in, tokens, params_.data() + layout_.wte(), positions, B, T, C);
  } else if (input.data() != in.data()) {
    assert(input.type() == storage_);
    backend_.copy(in.data(), input.data(), BTC * kernels::element_bytes(storage_));
  }
  layers_forward(slot);
  if (recompute_ == Recompute::full) {
    // The output leaves the shared set, which the next backward's recomputation overwrites
    // while a send may still read the output.
    backend_.copy(output(slot).data(), layer_acts(slot, layout_.layers().count() - 1)[res3].data(),
                  BTC * kernels::element_bytes(storage_));
    shared_holds_ = slot;
  }
}

NormOutput Stage::norm_output(const LayerActs& a, Act out, Act mean, Act rstd) {
  return {a[out], a[mean].as_f32(), a[rstd].as_f32()};
}

NormOutput Stage::final_norm(int slot) {
  return {at(slot, acts_.lnf), at(slot, acts_.lnf_mean).as_f32(), at(slot, acts_.lnf_rstd).as_f32()};
}

void Stage::ln1_forward(int slot, int i) {
  const int N = rows_[slot] * T_;
  const kernels::ConstTensor lp = weights() + layout_.layer(layout_.layers().begin + i);
  const LayerOffsets& w = layout_.layer_offsets();
  const LayerActs a = layer_acts(slot, i);
  ModelNorm(backend_, config_).forward(norm_output(a, ln1, ln1_mean, ln1_rstd), layer_input(slot, i), lp + w.ln1_w,
                                       optional_tensor(lp, w.ln1_b), N);
}

void Stage::attention_forward(int slot, int i) {
  const int B = rows_[slot], T = T_, C = config_.channels;
  const kernels::ConstTensor lp = weights() + layout_.layer(layout_.layers().begin + i);
  const LayerOffsets& w = layout_.layer_offsets();
  const LayerActs a = layer_acts(slot, i);
  const kernels::AttentionHeads heads = attention_heads(config_);
  backend_.matmul_forward(a[qkv], a[ln1], lp + w.qkv_w, optional_tensor(lp, w.qkv_b), B * T, C,
                          static_cast<int>(heads.qkv_row()));
  if (config_.positions == PositionKind::rotary) backend_.rotary_forward(a[qkv], inv_freq_.data(), B, T, 0, heads);
  backend_.attention_forward(a[atty], a[att_saved].as_f32(), a[qkv], B, T, heads);
}

void Stage::layers_forward(int slot) {
  const int B = rows_[slot], T = T_;
  const kernels::ConstTensor p = weights();
  const LayerRange range = layout_.layers();
  const LayerOffsets& w = layout_.layer_offsets();
  const kernels::AttentionHeads heads = attention_heads(config_);
  // The first layer's ln1 alone; every later norm (the next layer's ln1, or the final one on a
  // stage with the head) fused with the residual add before it (block_forward).
  ln1_forward(slot, 0);
  for (int l = range.begin; l < range.end; l++) {
    const int i = l - range.begin;
    const LayerActs a = layer_acts(slot, i);
    const BlockActivations block{layer_input(slot, i), a[ln1], a[qkv], a[atty], a[res2],
                                 norm_output(a, ln2, ln2_mean, ln2_rstd), a[fch], a[fch_act], scratch(branch_),
                                 a[res3]};
    const auto attend = [&](kernels::Tensor out, kernels::ConstTensor qkv_in) {
      backend_.attention_forward(out, a[att_saved].as_f32(), qkv_in, B, T, heads);
    };
    std::optional<NextNorm> next;
    if (l + 1 < range.end) {
      const kernels::ConstTensor next_lp = p + layout_.layer(l + 1);
      next = NextNorm{norm_output(layer_acts(slot, i + 1), ln1, ln1_mean, ln1_rstd), next_lp + w.ln1_w,
                      optional_tensor(next_lp, w.ln1_b)};
    } else if (layout_.has_head()) {
      next = NextNorm{final_norm(slot), p + layout_.lnf_w(), optional_tensor(p, layout_.lnf_b())};
    }
    block_forward(backend_, config_, block, p + layout_.layer(l), w, {B, T, 0, inv_freq_.data()}, attend,
                  next ? &*next : nullptr);
  }
}

int Stage::head_samples(const ModelConfig& config, int B) {
  const size_t kept = layer_widths(config).kept(static_cast<size_t>(config.channels));
  const size_t fit = static_cast<size_t>(B) * kept / static_cast<size_t>(config.padded_vocab_size);
  return static_cast<int>(std::clamp<size_t>(fit, 1, static_cast<size_t>(B)));
}

void Stage::loss(int slot, const int32_t* host_targets, float grad_scale, int counted_rows) {
  assert(layout_.has_head());
  const int B = rows_[slot], T = T_, C = config_.channels, Vp = config_.padded_vocab_size;
  const int N = B * T;
  targets_uploaded_.wait();  // the previous upload has read the pinned buffer
  std::copy(host_targets, host_targets + N, targets_upload_.data());
  backend_.copy_to_device_async(targets_.data(), targets_upload_.data(), sizeof(int32_t) * N);
  targets_uploaded_.record();
  // The head in chunks of whole samples (head_samples): each chunk's logits, its losses and, when
  // training, its dlogits taken at once through the head's matmul into dW and the rows of dlnf
  // (dbtc), which backward(slot) starts from.
  const kernels::ConstTensor head = weights() + layout_.head_wte();
  for (int b0 = 0; b0 < B; b0 += head_samples_) {
    const int samples = std::min(head_samples_, B - b0), rows = samples * T;
    const size_t row0 = static_cast<size_t>(b0) * T;
    const kernels::ConstTensor lnf = at(slot, acts_.lnf) + row0 * C;
    backend_.matmul_forward(scratch(logits_), lnf, head, nullptr, rows, C, Vp);
    backend_.crossentropy_forward_backward(sample_losses_.data() + b0, scratch(logits_), targets_.data() + row0,
                                           samples, T, config_.vocab_size, Vp, grad_scale);
    if (grad_scale != 0)
      backend_.matmul_backward(scratch(dbtc_) + row0 * C, grads_.data() + layout_.head_wte(), nullptr,
                               scratch(logits_), lnf, head, rows, C, Vp);
  }
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

void Stage::backward(int slot, kernels::ConstTensor doutput, const std::function<void(int unit)>& on_unit_done,
                     KeptEmbeddingRows keep) {
  auto done = [&on_unit_done](int unit) {
    if (on_unit_done) on_unit_done(unit);
  };
  const int B = rows_[slot], T = T_, C = config_.channels;
  const int N = B * T;
  const size_t BTC = static_cast<size_t>(N) * C;
  const kernels::ConstTensor p = weights();
  float* g = grads_.data();
  const ModelNorm norm(backend_, config_);
  const kernels::AttentionHeads heads = attention_heads(config_);
  const LayerWidths W = layer_widths(config_);
  const int QKV = static_cast<int>(W.qkv), Q = static_cast<int>(W.atty), F = static_cast<int>(W.fc),
            FA = static_cast<int>(W.fc_act);
  const kernels::Tensor dres = scratch(dresidual_);  // (B, T, C): gradient of the residual stream, flowing down

  if (recompute_ == Recompute::full && shared_holds_ != slot) {
    layers_forward(slot);  // the same kernels on the same input: the same activations, bit for bit
    shared_holds_ = slot;
  }
  if (layout_.has_head()) {
    // dbtc holds dlnf, and the head's dW is complete: loss(slot, targets, scale) took them.
    backend_.fill_zero(dres, BTC);
    norm.backward(dres, g + layout_.lnf_w(), optional_tensor(g, layout_.lnf_b()), scratch(dbtc_), output(slot),
                  p + layout_.lnf_w(), final_norm(slot), N);
    done(config_.num_layers + 1);
  } else {
    assert(doutput.type() == storage_);
    backend_.copy(dres.data(), doutput.data(), BTC * kernels::element_bytes(storage_));
  }

  const LayerOffsets& w = layout_.layer_offsets();
  const LayerRange range = layout_.layers();
  for (int l = range.end - 1; l >= range.begin; l--) {
    const int i = l - range.begin;
    const kernels::ConstTensor x = layer_input(slot, i);
    const LayerActs a = layer_acts(slot, i);
    const kernels::ConstTensor lp = p + layout_.layer(l);
    float* lg = g + layout_.layer(l);
    // res3 = res2 + fcproj(act(fc(ln2(res2)))): dres flows through both paths.
    if (config_.mlp == MlpKind::gelu) {
      backend_.matmul_dgelu_backward(scratch(dfch_), lg + w.fcproj_w, optional_tensor(lg, w.fcproj_b), dres, a[fch_act],
                                     lp + w.fcproj_w, a[fch], N, FA, C);
    } else {
      backend_.matmul_backward(scratch(dfch_act_), lg + w.fcproj_w, optional_tensor(lg, w.fcproj_b), dres, a[fch_act],
                               lp + w.fcproj_w, N, FA, C);
      backend_.swiglu_backward(scratch(dfch_), a[fch], scratch(dfch_act_), N, FA);
    }
    backend_.matmul_backward(scratch(dbtc_), lg + w.fc_w, optional_tensor(lg, w.fc_b), scratch(dfch_), a[ln2],
                             lp + w.fc_w, N, C, F);
    norm.backward(dres, lg + w.ln2_w, optional_tensor(lg, w.ln2_b), scratch(dbtc_), a[res2], lp + w.ln2_w,
                  norm_output(a, ln2, ln2_mean, ln2_rstd), N);
    // res2 = x + attproj(attention(qkv(ln1(x)))); selective recomputes that half's activations.
    if (recompute_ == Recompute::selective) {
      ln1_forward(slot, i);  // the bits layers_forward's fused norm made
      attention_forward(slot, i);
    }
    backend_.matmul_backward(scratch(dbtc_), lg + w.attproj_w, optional_tensor(lg, w.attproj_b), dres, a[atty],
                             lp + w.attproj_w, N, Q, C);
    backend_.attention_backward(scratch(dqkv_), scratch(dbtc_), a[qkv], a[atty], a[att_saved].as_f32(), B, T, heads);
    // qkv holds q and k turned; their gradient turns back to the matmul's outputs.
    if (config_.positions == PositionKind::rotary)
      backend_.rotary_backward(scratch(dqkv_), inv_freq_.data(), B, T, 0, heads);
    backend_.matmul_backward(scratch(dbtc_), lg + w.qkv_w, optional_tensor(lg, w.qkv_b), scratch(dqkv_), a[ln1],
                             lp + w.qkv_w, N, C, QKV);
    norm.backward(dres, lg + w.ln1_w, optional_tensor(lg, w.ln1_b), scratch(dbtc_), x, lp + w.ln1_w,
                  norm_output(a, ln1, ln1_mean, ln1_rstd), N);
    done(l + 1);
  }

  if (layout_.has_embedding()) {
    const int32_t* tokens = tokens_.data() + static_cast<size_t>(B_) * T * slot;
    if (keep.rows) {
      assert(keep.rows.type() == storage_);
      backend_.copy(keep.rows.data(), dres.data(), BTC * kernels::element_bytes(storage_));
      backend_.copy(keep.ids, tokens, sizeof(int32_t) * N);
    }
    float* dwpe = learned_positions() ? g + layout_.wpe() : nullptr;
    backend_.encoder_backward(keep.rows ? nullptr : g + layout_.wte(), dwpe, dres, tokens, B, T, C);
    done(0);
  }
}

}  // namespace eth

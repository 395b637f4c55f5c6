#include "lib/model/param_layout.hpp"

#include <cassert>
#include <cmath>

#include "lib/base/random.hpp"

namespace eth {
namespace {

LayerOffsets make_layer_offsets(size_t C) {
  LayerOffsets o{};
  size_t at = 0;
  auto take = [&at](size_t n) { size_t here = at; at += n; return here; };
  o.ln1_w = take(C);
  o.ln1_b = take(C);
  o.qkv_w = take(3 * C * C);
  o.qkv_b = take(3 * C);
  o.attproj_w = take(C * C);
  o.attproj_b = take(C);
  o.ln2_w = take(C);
  o.ln2_b = take(C);
  o.fc_w = take(4 * C * C);
  o.fc_b = take(4 * C);
  o.fcproj_w = take(4 * C * C);
  o.fcproj_b = take(C);
  o.size = at;
  return o;
}

}  // namespace

ParamLayout::ParamLayout(const GptConfig& config, LayerRange layers)
    : layers_(layers),
      num_layers_(config.num_layers),
      channels_(static_cast<size_t>(config.channels)),
      wte_size_(static_cast<size_t>(config.padded_vocab_size) * config.channels),
      wpe_size_(static_cast<size_t>(config.max_seq_len) * config.channels),
      layer_offsets_(make_layer_offsets(static_cast<size_t>(config.channels))) {
  assert(0 <= layers.begin && layers.begin < layers.end && layers.end <= config.num_layers);
  const size_t C = channels_;
  const size_t maxT = static_cast<size_t>(config.max_seq_len);
  const size_t Vp = static_cast<size_t>(config.padded_vocab_size);
  auto add_tensor = [this](std::string name, std::vector<size_t> shape, size_t offset, bool decay) {
    size_t n = 1;
    for (size_t d : shape) n *= d;
    tensors_.push_back({std::move(name), std::move(shape), offset, n, decay});
  };

  size_t at = 0;
  if (has_embedding()) {
    embedding_offset_ = at;
    add_tensor("wte", {Vp, C}, at, true);
    add_tensor("wpe", {maxT, C}, at + wte_size_, true);
    blocks_.push_back({BlockKind::embedding, -1, at, wte_size_ + maxT * C});
    at += wte_size_ + maxT * C;
  }
  layers_offset_ = at;
  const LayerOffsets& o = layer_offsets_;
  for (int l = layers.begin; l < layers.end; l++) {
    const std::string p = "layer" + std::to_string(l) + ".";
    add_tensor(p + "ln1_w", {C}, at + o.ln1_w, false);
    add_tensor(p + "ln1_b", {C}, at + o.ln1_b, false);
    add_tensor(p + "qkv_w", {3 * C, C}, at + o.qkv_w, true);
    add_tensor(p + "qkv_b", {3 * C}, at + o.qkv_b, false);
    add_tensor(p + "attproj_w", {C, C}, at + o.attproj_w, true);
    add_tensor(p + "attproj_b", {C}, at + o.attproj_b, false);
    add_tensor(p + "ln2_w", {C}, at + o.ln2_w, false);
    add_tensor(p + "ln2_b", {C}, at + o.ln2_b, false);
    add_tensor(p + "fc_w", {4 * C, C}, at + o.fc_w, true);
    add_tensor(p + "fc_b", {4 * C}, at + o.fc_b, false);
    add_tensor(p + "fcproj_w", {C, 4 * C}, at + o.fcproj_w, true);
    add_tensor(p + "fcproj_b", {C}, at + o.fcproj_b, false);
    blocks_.push_back({BlockKind::layer, l, at, o.size});
    at += o.size;
  }
  if (has_head()) {
    final_offset_ = at;
    add_tensor("lnf_w", {C}, at, false);
    add_tensor("lnf_b", {C}, at + C, false);
    blocks_.push_back({BlockKind::final_norm, -1, at, 2 * C});
    at += 2 * C;
    if (!has_embedding()) {
      head_offset_ = at;
      add_tensor("wte", {Vp, C}, at, true);  // the tied copy: same name, same values
      blocks_.push_back({BlockKind::head, -1, at, wte_size_});
      at += wte_size_;
    }
  }
  size_ = at;
}

size_t ParamLayout::layer(int l) const {
  assert(layers_.begin <= l && l < layers_.end);
  return layers_offset_ + static_cast<size_t>(l - layers_.begin) * layer_offsets_.size;
}

size_t ParamLayout::unit_offset(int unit) const {
  if (unit == 0) return wpe();
  if (unit == num_layers_ + 1) return lnf_w();
  return layer(unit - 1);
}

size_t ParamLayout::unit_size(int unit) const {
  if (unit == 0) return wpe_size_;
  if (unit == num_layers_ + 1) return 2 * channels_;
  return layer_offsets_.size;
}

void init_gpt2_parameters(const GptConfig& config, const ParamLayout& layout, uint64_t seed,
                          float* host_params) {
  const double residual_std = 0.02 / std::sqrt(2.0 * config.num_layers);
  for (const ParamTensor& t : layout.tensors()) {
    float* p = host_params + t.offset;
    const std::string& n = t.name;
    const auto ends_with = [&n](const char* suffix) {
      const std::string s(suffix);
      return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
    };
    if (ends_with("_b")) {
      for (size_t i = 0; i < t.size; i++) p[i] = 0.0f;
    } else if (ends_with("ln1_w") || ends_with("ln2_w") || n == "lnf_w") {
      for (size_t i = 0; i < t.size; i++) p[i] = 1.0f;
    } else {
      const double std = (ends_with("attproj_w") || ends_with("fcproj_w")) ? residual_std : 0.02;
      const uint64_t stream = hash_string(n) ^ seed;
      for (size_t i = 0; i < t.size; i++) p[i] = static_cast<float>(std * normal_at(stream, i));
    }
  }
}

}  // namespace eth

#include "lib/model/param_layout.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "lib/base/random.hpp"

namespace eth {
namespace {

// Where each of a layer's tensors lies, from the model's list; kAbsent for those it lacks.
LayerOffsets make_layer_offsets(const TensorList& tensors) {
  LayerOffsets o{};
  std::pair<const char*, size_t LayerOffsets::*> fields[] = {
      {"ln1_w", &LayerOffsets::ln1_w},         {"ln1_b", &LayerOffsets::ln1_b},
      {"qkv_w", &LayerOffsets::qkv_w},         {"qkv_b", &LayerOffsets::qkv_b},
      {"attproj_w", &LayerOffsets::attproj_w}, {"attproj_b", &LayerOffsets::attproj_b},
      {"ln2_w", &LayerOffsets::ln2_w},         {"ln2_b", &LayerOffsets::ln2_b},
      {"fc_w", &LayerOffsets::fc_w},           {"fc_b", &LayerOffsets::fc_b},
      {"fcproj_w", &LayerOffsets::fcproj_w},   {"fcproj_b", &LayerOffsets::fcproj_b}};
  for (auto& [name, field] : fields) o.*field = LayerOffsets::kAbsent;
  size_t at = 0;
  for (const TensorSpec& t : tensors) {
    for (auto& [name, field] : fields)
      if (t.name == name) o.*field = at;
    at += t.size();
  }
  o.size = at;
  return o;
}

}  // namespace

ParamLayout::ParamLayout(const ModelConfig& config, LayerRange layers)
    : layers_(layers),
      num_layers_(config.num_layers),
      channels_(static_cast<size_t>(config.channels)),
      tied_(config.tied_head),
      has_norm_bias_(config.norm == NormKind::layernorm),
      wte_size_(static_cast<size_t>(config.padded_vocab_size) * config.channels),
      wpe_size_(config.positions == PositionKind::learned ? static_cast<size_t>(config.max_seq_len) * config.channels
                                                           : 0),
      layer_offsets_(make_layer_offsets(layer_tensors(config))) {
  assert(0 <= layers.begin && layers.begin < layers.end && layers.end <= config.num_layers);
  size_t at = 0;
  // Places a block's tensors at `at`, their names prefixed, and returns the block's size.
  auto place = [this, &at](BlockKind kind, int layer, const TensorList& tensors, const std::string& prefix) {
    const size_t begin = at;
    for (const TensorSpec& t : tensors) {
      tensors_.push_back({prefix + std::string(t.name), t.shape(), at, t.size(), t.weight_decay, t.init});
      at += t.size();
    }
    blocks_.push_back({kind, layer, begin, at - begin});
  };
  if (has_embedding()) {
    embedding_offset_ = at;
    place(BlockKind::embedding, -1, embedding_tensors(config), "");
  }
  layers_offset_ = at;
  const TensorList layer = layer_tensors(config);
  for (int l = layers.begin; l < layers.end; l++) place(BlockKind::layer, l, layer, "layer" + std::to_string(l) + ".");
  if (has_head()) {
    final_offset_ = at;
    place(BlockKind::final_norm, -1, final_norm_tensors(config), "");
    if (!tied_ || !has_embedding()) {  // the untied head, or the tied copy of wte
      head_offset_ = at;
      place(BlockKind::head, -1, head_tensors(config), "");
    }
  }
  size_ = at;
}

size_t ParamLayout::layer(int l) const {
  assert(layers_.begin <= l && l < layers_.end);
  return layers_offset_ + static_cast<size_t>(l - layers_.begin) * layer_offsets_.size;
}

size_t ParamLayout::unit_offset(int unit) const {
  if (unit == 0) return tied_ ? wpe() : wte();
  if (unit == num_layers_ + 1) return lnf_w();
  return layer(unit - 1);
}

size_t ParamLayout::unit_size(int unit) const {
  const size_t final_norm = has_norm_bias_ ? 2 * channels_ : channels_;
  if (unit == 0) return tied_ ? wpe_size_ : wte_size_ + wpe_size_;
  if (unit == num_layers_ + 1) return tied_ ? final_norm : final_norm + wte_size_;
  return layer_offsets_.size;
}

void init_parameters(const ModelConfig& config, const ParamLayout& layout, uint64_t seed, float* host_params) {
  const double residual_std = 0.02 / std::sqrt(2.0 * config.num_layers);
  for (const ParamTensor& t : layout.tensors()) {
    float* p = host_params + t.offset;
    switch (t.init) {
      case TensorInit::zeros: std::fill(p, p + t.size, 0.0f); break;
      case TensorInit::ones: std::fill(p, p + t.size, 1.0f); break;
      case TensorInit::normal:
      case TensorInit::residual: {
        const double std = t.init == TensorInit::residual ? residual_std : 0.02;
        const uint64_t stream = hash_string(t.name) ^ seed;
        for (size_t i = 0; i < t.size; i++) p[i] = static_cast<float>(std * normal_at(stream, i));
        break;
      }
    }
  }
}

}  // namespace eth

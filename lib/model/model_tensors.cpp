#include "lib/model/model_tensors.hpp"

#include "kernels/adamw_segments.hpp"

namespace eth {
namespace {

size_t sum_sizes(const TensorList& tensors) {
  size_t n = 0;
  for (const TensorSpec& t : tensors) n += t.size();
  return n;
}

size_t mlp_rows(const ModelConfig& c) {
  const size_t FC = static_cast<size_t>(c.ffn_channels);
  return c.mlp == MlpKind::swiglu ? 2 * FC : FC;
}

bool has_norm_bias(const ModelConfig& c) { return c.norm == NormKind::layernorm; }

}  // namespace

std::vector<size_t> TensorSpec::shape() const {
  if (cols == 0) return {rows};
  return {rows, cols};
}

TensorList embedding_tensors(const ModelConfig& c) {
  const size_t C = static_cast<size_t>(c.channels);
  TensorList t;
  t.add({"wte", static_cast<size_t>(c.padded_vocab_size), C, TensorInit::normal, true});
  if (c.positions == PositionKind::learned)
    t.add({"wpe", static_cast<size_t>(c.max_seq_len), C, TensorInit::normal, true});
  return t;
}

TensorList layer_tensors(const ModelConfig& c) {
  const size_t C = static_cast<size_t>(c.channels), FC = static_cast<size_t>(c.ffn_channels);
  const size_t QKV = static_cast<size_t>(c.qkv_channels()), Q = static_cast<size_t>(c.q_channels());
  const bool norm_bias = has_norm_bias(c);
  TensorList t;
  // A weight, and its bias where the model has one.
  auto add = [&t](std::string_view w, std::string_view b, size_t rows, size_t cols, TensorInit init, bool bias) {
    t.add({w, rows, cols, init, cols != 0});
    if (bias) t.add({b, rows, 0, TensorInit::zeros, false});
  };
  add("ln1_w", "ln1_b", C, 0, TensorInit::ones, norm_bias);
  add("qkv_w", "qkv_b", QKV, C, TensorInit::normal, c.attention_bias);
  add("attproj_w", "attproj_b", C, Q, TensorInit::residual, c.attention_bias);
  add("ln2_w", "ln2_b", C, 0, TensorInit::ones, norm_bias);
  add("fc_w", "fc_b", mlp_rows(c), C, TensorInit::normal, c.mlp_bias);
  add("fcproj_w", "fcproj_b", C, FC, TensorInit::residual, c.mlp_bias);
  return t;
}

TensorList final_norm_tensors(const ModelConfig& c) {
  const size_t C = static_cast<size_t>(c.channels);
  TensorList t;
  t.add({"lnf_w", C, 0, TensorInit::ones, false});
  if (has_norm_bias(c)) t.add({"lnf_b", C, 0, TensorInit::zeros, false});
  return t;
}

TensorList head_tensors(const ModelConfig& c) {
  TensorList t;
  t.add({c.tied_head ? "wte" : "lm_head_w", static_cast<size_t>(c.padded_vocab_size),
         static_cast<size_t>(c.channels), TensorInit::normal, true});
  return t;
}

BlockCounts block_counts(const ModelConfig& c) {
  // What the tensor lists depend on: compared on every call, so integers alone (no name).
  struct Key {
    int Vp, maxT, C, NH, NKV, hs, FC, parts;
    bool operator==(const Key&) const = default;
  };
  const Key key{c.padded_vocab_size, c.max_seq_len, c.channels, c.num_heads, c.num_kv_heads, c.head_dim,
                c.ffn_channels,
                static_cast<int>(c.norm) | static_cast<int>(c.positions) << 2 | static_cast<int>(c.mlp) << 4 |
                    c.attention_bias << 6 | c.mlp_bias << 7 | c.tied_head << 8};
  thread_local Key last{};
  thread_local BlockCounts counts;
  if (key == last && last.C != 0) return counts;
  auto segments = [](const TensorList& tensors) {
    size_t n = 0;
    for (const TensorSpec& t : tensors) n += (t.size() + kernels::kAdamWSegmentFloats - 1) / kernels::kAdamWSegmentFloats;
    return n;
  };
  const TensorList e = embedding_tensors(c), l = layer_tensors(c), f = final_norm_tensors(c), h = head_tensors(c);
  counts = {sum_sizes(e), sum_sizes(l), sum_sizes(f), sum_sizes(h), segments(e), segments(l), segments(f), segments(h)};
  last = key;
  return counts;
}

size_t embedding_params(const ModelConfig& c) { return block_counts(c).embedding; }
size_t layer_params(const ModelConfig& c) { return block_counts(c).layer; }
size_t final_norm_params(const ModelConfig& c) { return block_counts(c).final_norm; }
size_t head_params(const ModelConfig& c) { return block_counts(c).head; }

size_t stage_params(const ModelConfig& c, LayerRange layers) {
  const BlockCounts b = block_counts(c);
  const bool first = layers.begin == 0, last = layers.end == c.num_layers;
  size_t n = static_cast<size_t>(layers.count()) * b.layer;
  if (first) n += b.embedding;
  if (last) n += b.final_norm + (c.tied_head && first ? 0 : b.head);
  return n;
}

double model_params(const ModelConfig& c) {
  return double(embedding_params(c)) + double(c.num_layers) * double(layer_params(c)) +
         double(final_norm_params(c)) + (c.tied_head ? 0.0 : double(head_params(c)));
}

double layer_matmul_flops(const ModelConfig& c) {
  double weights = 0;
  for (const TensorSpec& t : layer_tensors(c))
    if (t.cols != 0) weights += double(t.size());
  return 2 * weights;
}

double attention_score_flops(const ModelConfig& c, int T) { return 4.0 * T * c.q_channels(); }

double attention_projection_flops(const ModelConfig& c) { return 2.0 * c.channels * double(c.qkv_channels()); }

double flop_parameters(const ModelConfig& c) {
  return double(c.num_layers) * double(layer_params(c)) + double(final_norm_params(c)) + double(head_params(c));
}

double training_flops_per_token(const ModelConfig& c, int T) {
  return 6.0 * flop_parameters(c) + 3.0 * c.num_layers * attention_score_flops(c, T);
}

LayerWidths layer_widths(const ModelConfig& c) {
  return {static_cast<size_t>(c.qkv_channels()), static_cast<size_t>(c.q_channels()), mlp_rows(c),
          static_cast<size_t>(c.ffn_channels)};
}

kernels::AttentionHeads attention_heads(const ModelConfig& c) { return {c.num_heads, c.num_kv_heads, c.head_dim}; }

kernels::StageShape stage_shape(const ModelConfig& c, LayerRange layers, int B, int T, size_t gathered_rows) {
  const LayerWidths W = layer_widths(c);
  return {B,
          T,
          c.channels,
          attention_heads(c),
          static_cast<int>(W.fc),
          static_cast<int>(W.fc_act),
          c.mlp == MlpKind::swiglu,
          c.padded_vocab_size,
          layers.begin == 0,
          layers.end == c.num_layers,
          gathered_rows};
}

}  // namespace eth

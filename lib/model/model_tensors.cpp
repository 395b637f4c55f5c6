#include "lib/model/model_tensors.hpp"

namespace eth {
namespace {

size_t sum_sizes(const std::vector<TensorSpec>& tensors) {
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

size_t TensorSpec::size() const {
  size_t n = 1;
  for (size_t d : shape) n *= d;
  return n;
}

std::vector<TensorSpec> embedding_tensors(const ModelConfig& c) {
  const size_t C = static_cast<size_t>(c.channels);
  std::vector<TensorSpec> t = {{"wte", {static_cast<size_t>(c.padded_vocab_size), C}, TensorInit::normal, true}};
  if (c.positions == PositionKind::learned)
    t.push_back({"wpe", {static_cast<size_t>(c.max_seq_len), C}, TensorInit::normal, true});
  return t;
}

std::vector<TensorSpec> layer_tensors(const ModelConfig& c) {
  const size_t C = static_cast<size_t>(c.channels), FC = static_cast<size_t>(c.ffn_channels);
  const size_t QKV = static_cast<size_t>(c.qkv_channels()), Q = static_cast<size_t>(c.q_channels());
  std::vector<TensorSpec> t;
  auto norm = [&](const std::string& n) {
    t.push_back({n + "_w", {C}, TensorInit::ones, false});
    if (has_norm_bias(c)) t.push_back({n + "_b", {C}, TensorInit::zeros, false});
  };
  auto linear = [&t](const std::string& n, size_t out, size_t in, TensorInit init, bool bias) {
    t.push_back({n + "_w", {out, in}, init, true});
    if (bias) t.push_back({n + "_b", {out}, TensorInit::zeros, false});
  };
  norm("ln1");
  linear("qkv", QKV, C, TensorInit::normal, c.attention_bias);
  linear("attproj", C, Q, TensorInit::residual, c.attention_bias);
  norm("ln2");
  linear("fc", mlp_rows(c), C, TensorInit::normal, c.mlp_bias);
  linear("fcproj", C, FC, TensorInit::residual, c.mlp_bias);
  return t;
}

std::vector<TensorSpec> final_norm_tensors(const ModelConfig& c) {
  const size_t C = static_cast<size_t>(c.channels);
  std::vector<TensorSpec> t = {{"lnf_w", {C}, TensorInit::ones, false}};
  if (has_norm_bias(c)) t.push_back({"lnf_b", {C}, TensorInit::zeros, false});
  return t;
}

TensorSpec head_tensor(const ModelConfig& c) {
  return {c.tied_head ? "wte" : "lm_head_w",
          {static_cast<size_t>(c.padded_vocab_size), static_cast<size_t>(c.channels)},
          TensorInit::normal,
          true};
}

size_t embedding_params(const ModelConfig& c) { return sum_sizes(embedding_tensors(c)); }
size_t layer_params(const ModelConfig& c) { return sum_sizes(layer_tensors(c)); }
size_t final_norm_params(const ModelConfig& c) { return sum_sizes(final_norm_tensors(c)); }
size_t head_params(const ModelConfig& c) { return head_tensor(c).size(); }

size_t stage_params(const ModelConfig& c, LayerRange layers) {
  const bool first = layers.begin == 0, last = layers.end == c.num_layers;
  size_t n = static_cast<size_t>(layers.count()) * layer_params(c);
  if (first) n += embedding_params(c);
  if (last) n += final_norm_params(c) + (c.tied_head && first ? 0 : head_params(c));
  return n;
}

double model_params(const ModelConfig& c) {
  return double(embedding_params(c)) + double(c.num_layers) * double(layer_params(c)) +
         double(final_norm_params(c)) + (c.tied_head ? 0.0 : double(head_params(c)));
}

double layer_matmul_flops(const ModelConfig& c) {
  double weights = 0;
  for (const TensorSpec& t : layer_tensors(c))
    if (t.shape.size() == 2) weights += double(t.size());
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

}  // namespace eth

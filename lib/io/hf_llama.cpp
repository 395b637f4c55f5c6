#include "lib/io/hf_llama.hpp"

#include <cstring>
#include <set>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/model/param_layout.hpp"

namespace eth {
namespace {

// One transformers tensor: a run of whole rows of an ETH tensor.
struct Slice {
  std::string hf;
  size_t offset;              // in the one-stage buffer (P)
  std::vector<size_t> shape;  // transformers' shape
};

std::vector<Slice> slices(const ModelConfig& m) {
  const ParamLayout layout(m, {0, m.num_layers});
  std::map<std::string, const ParamTensor*> eth;
  for (const ParamTensor& t : layout.tensors()) eth[t.name] = &t;
  const size_t C = m.channels, V = m.vocab_size, FC = m.ffn_channels;
  const size_t q = m.q_channels(), kv = m.kv_channels();
  std::vector<Slice> out;
  // `rows` rows from row `first` of the ETH tensor: (rows, cols), or (rows) for a vector.
  const auto add = [&](std::string hf, const std::string& name, size_t first, size_t rows) {
    const ParamTensor& t = *eth.at(name);
    const size_t cols = t.shape.size() == 2 ? t.shape[1] : 1;
    std::vector<size_t> shape = t.shape.size() == 2 ? std::vector<size_t>{rows, cols} : std::vector<size_t>{rows};
    out.push_back({std::move(hf), t.offset + first * cols, std::move(shape)});
  };
  add("model.embed_tokens.weight", "wte", 0, V);
  for (int l = 0; l < m.num_layers; l++) {
    const std::string hf = "model.layers." + std::to_string(l) + ".", eth_l = "layer" + std::to_string(l) + ".";
    add(hf + "input_layernorm.weight", eth_l + "ln1_w", 0, C);
    const char* const parts[] = {"weight", "bias"};
    for (const char* part : parts) {
      const bool bias = part == parts[1];
      if (bias && !m.attention_bias) break;
      const std::string qkv = eth_l + (bias ? "qkv_b" : "qkv_w");
      add(hf + "self_attn.q_proj." + part, qkv, 0, q);
      add(hf + "self_attn.k_proj." + part, qkv, q, kv);
      add(hf + "self_attn.v_proj." + part, qkv, q + kv, kv);
      add(hf + "self_attn.o_proj." + part, eth_l + (bias ? "attproj_b" : "attproj_w"), 0, C);
    }
    add(hf + "post_attention_layernorm.weight", eth_l + "ln2_w", 0, C);
    for (const char* part : parts) {
      const bool bias = part == parts[1];
      if (bias && !m.mlp_bias) break;
      const std::string fc = eth_l + (bias ? "fc_b" : "fc_w");
      add(hf + "mlp.gate_proj." + part, fc, 0, FC);
      add(hf + "mlp.up_proj." + part, fc, FC, FC);
      add(hf + "mlp.down_proj." + part, eth_l + (bias ? "fcproj_b" : "fcproj_w"), 0, C);
    }
  }
  add("model.norm.weight", "lnf_w", 0, C);
  if (!m.tied_head) add("lm_head.weight", "lm_head_w", 0, V);
  return out;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<SafetensorsTensor> hf_llama_tensors(const ModelConfig& model, const std::vector<float>& whole) {
  std::vector<SafetensorsTensor> out;
  for (const Slice& s : slices(model)) out.push_back({s.hf, s.shape, whole.data() + s.offset});
  return out;
}

std::vector<float> read_hf_llama_tensors(HfWeights& files, const ModelConfig& model) {
  const ParamLayout layout(model, {0, model.num_layers});
  std::vector<float> whole(layout.size(), 0.0f);  // (P); the padded rows stay zero
  std::set<std::string> known;
  for (const Slice& s : slices(model)) {
    const std::vector<float> values = files.read(s.hf, s.shape);
    std::memcpy(whole.data() + s.offset, values.data(), values.size() * sizeof(float));
    known.insert(s.hf);
  }
  const std::string head = "lm_head.weight", embed = "model.embed_tokens.weight";
  if (model.tied_head && files.has(head)) {  // tied, saved anyway: must be the embedding
    const size_t V = model.vocab_size, C = model.channels;
    const std::vector<float> values = files.read(head, {V, C});
    const float* wte = whole.data() + layout.wte();  // (V, C) of it
    size_t differ = 0;  // the first element whose bits differ
    while (differ < values.size() && std::memcmp(&values[differ], &wte[differ], sizeof(float)) == 0) differ++;
    if (differ != values.size())
      fail_input(files.path_of(head), "tensor \"" + head + "\"",
                 "the tied embedding, equal to \"" + embed + "\" (tie_word_embeddings true)",
                 strprintf("a different tensor (row %zu, column %zu first differs)", differ / C, differ % C));
    known.insert(head);
  }
  for (const auto& [name, path] : files.names())
    if (!known.count(name) && !ends_with(name, ".self_attn.rotary_emb.inv_freq"))
      fail_input(path, "tensor \"" + name + "\"",
                 strprintf("only this Llama's tensors (LlamaForCausalLM, %d layers, attention_bias %s, mlp_bias %s, %s head)",
                           model.num_layers, model.attention_bias ? "true" : "false", model.mlp_bias ? "true" : "false",
                           model.tied_head ? "tied" : "untied"),
                 "a tensor it does not have");
  return whole;
}

}  // namespace eth

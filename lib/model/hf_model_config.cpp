#include "lib/model/hf_model_config.hpp"

#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "lib/base/input_error.hpp"

namespace eth {
namespace {

using nlohmann::json;
constexpr int64_t kMaxSize = int64_t(1) << 30;

// config.json's keys, each read with transformers' default where it has one.
class Keys {
 public:
  Keys(const std::string& path, const json& root) : path_(path), root_(root) {}

  const json* find(const char* key) const {
    const auto it = root_.find(key);
    return it == root_.end() || it->is_null() ? nullptr : &*it;
  }
  int integer(const char* key, std::optional<int> fallback = std::nullopt) const {
    const json* v = find(key);
    if (v == nullptr && fallback) return *fallback;
    if (v == nullptr) fail(key, "an integer in [1, 2^30]", "none");
    if (!v->is_number_integer() || v->get<int64_t>() < 1 || v->get<int64_t>() > kMaxSize)
      fail(key, "an integer in [1, 2^30]", v->dump());
    return static_cast<int>(v->get<int64_t>());
  }
  double number(const json& in, const char* key, std::optional<double> fallback, const std::string& name) const {
    const auto it = in.find(key);
    if ((it == in.end() || it->is_null()) && fallback) return *fallback;
    if (it == in.end() || !it->is_number() || !(it->get<double>() > 0))
      fail(name.c_str(), "a positive number", it == in.end() ? "none" : it->dump());
    return it->get<double>();
  }
  double number(const char* key, std::optional<double> fallback = std::nullopt) const {
    return number(root_, key, fallback, key);
  }
  bool boolean(const char* key, bool fallback) const {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) fail(key, "true or false", v->dump());
    return v->get<bool>();
  }
  std::string string(const json& in, const char* key, const std::string& fallback) const {
    const auto it = in.find(key);
    if (it == in.end() || it->is_null()) return fallback;
    if (!it->is_string()) fail(key, "a string", it->dump());
    return it->get<std::string>();
  }
  // A key that must hold `expected` (or be absent, meaning it) for ETH to compute the model.
  void require(const char* key, const json& expected, const std::string& supported) const {
    const json* v = find(key);
    if (v != nullptr && *v != expected) fail(key, supported, v->dump());
  }
  [[noreturn]] void fail(const char* key, const std::string& expected, const std::string& got) const {
    fail_input(path_, key, expected, got);
  }

 private:
  const std::string& path_;
  const json& root_;
};

// rope_scaling (older) or rope_parameters (transformers 5): the default rotation or Llama 3's.
void read_rope(const Keys& keys, ModelConfig& c) {
  const json* params = keys.find("rope_parameters");
  const json* scaling = params != nullptr ? params : keys.find("rope_scaling");
  const std::string where = params != nullptr ? "rope_parameters" : "rope_scaling";
  c.rope_theta = params != nullptr ? keys.number(*params, "rope_theta", keys.number("rope_theta", 10000.0),
                                                 where + ".rope_theta")
                                   : keys.number("rope_theta", 10000.0);
  if (scaling == nullptr) return;
  if (!scaling->is_object()) keys.fail(where.c_str(), "an object or null", scaling->dump());
  // "type" is the older spelling of "rope_type".
  const std::string type = keys.string(*scaling, "rope_type", keys.string(*scaling, "type", "default"));
  if (type == "default") return;
  if (type != "llama3")
    keys.fail((where + ".rope_type").c_str(), "\"default\" or \"llama3\" (the rotations ETH computes)",
              "\"" + type + "\"");
  RopeScaling& s = c.rope_scaling;
  s.factor = keys.number(*scaling, "factor", std::nullopt, where + ".factor");
  s.low_freq_factor = keys.number(*scaling, "low_freq_factor", std::nullopt, where + ".low_freq_factor");
  s.high_freq_factor = keys.number(*scaling, "high_freq_factor", std::nullopt, where + ".high_freq_factor");
  const double original = keys.number(*scaling, "original_max_position_embeddings", std::nullopt,
                                      where + ".original_max_position_embeddings");
  s.original_max_position = static_cast<int>(original);
}

ModelConfig read_llama(const Keys& keys, ModelConfig c) {
  c.family = ModelFamily::llama;
  c.vocab_size = keys.integer("vocab_size", 32000);
  c.channels = keys.integer("hidden_size", 4096);
  c.ffn_channels = keys.integer("intermediate_size", 11008);
  c.num_layers = keys.integer("num_hidden_layers", 32);
  c.num_heads = keys.integer("num_attention_heads", 32);
  c.num_kv_heads = keys.integer("num_key_value_heads", c.num_heads);
  if (c.num_heads % c.num_kv_heads != 0)
    keys.fail("num_key_value_heads", "a divisor of num_attention_heads (" + std::to_string(c.num_heads) + ")",
              std::to_string(c.num_kv_heads));
  c.head_dim = keys.integer("head_dim", c.channels % c.num_heads == 0 ? std::optional(c.channels / c.num_heads)
                                                                        : std::nullopt);
  c.max_seq_len = keys.integer("max_position_embeddings", 2048);
  c.norm = NormKind::rmsnorm;
  c.norm_eps = keys.number("rms_norm_eps", 1e-6);
  c.positions = PositionKind::rotary;
  read_rope(keys, c);
  c.mlp = MlpKind::swiglu;
  keys.require("hidden_act", "silu", "\"silu\" (SwiGLU's gate)");
  keys.require("attention_dropout", 0.0, "0 (ETH trains without dropout)");
  keys.require("rope_interleaved", false, "false (rotate-half, transformers' layout)");
  c.attention_bias = keys.boolean("attention_bias", false);
  c.mlp_bias = keys.boolean("mlp_bias", false);
  c.tied_head = keys.boolean("tie_word_embeddings", false);
  return c;
}

ModelConfig read_gpt2(const Keys& keys, ModelConfig c) {
  c = gpt2_config(c.name, keys.integer("vocab_size", 50257), 0, keys.integer("n_positions", 1024),
                  keys.integer("n_layer", 12), keys.integer("n_head", 12), keys.integer("n_embd", 768));
  c.ffn_channels = keys.integer("n_inner", c.ffn_channels);
  c.norm_eps = keys.number("layer_norm_epsilon", 1e-5);
  keys.require("activation_function", "gelu_new", "\"gelu_new\" (GELU's tanh approximation, ETH's)");
  keys.require("scale_attn_weights", true, "true (scores scaled by 1/sqrt(head size))");
  keys.require("scale_attn_by_inverse_layer_idx", false, "false");
  keys.require("reorder_and_upcast_attn", false, "false");
  keys.require("attn_pdrop", 0.0, "0 (ETH trains without dropout)");
  keys.require("embd_pdrop", 0.0, "0 (ETH trains without dropout)");
  keys.require("resid_pdrop", 0.0, "0 (ETH trains without dropout)");
  c.tied_head = keys.boolean("tie_word_embeddings", true);
  return c;
}

}  // namespace

int padded_vocab(int vocab_size) { return (vocab_size + 127) / 128 * 128; }

ModelConfig load_hf_model_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail_input(path, "file", "a readable config.json", "none");
  json root;
  try {
    root = json::parse(in);
  } catch (const json::exception& e) {  // a syntax error, or a number past double's range
    fail_input(path, "file", "a JSON config", e.what());
  }
  if (!root.is_object()) fail_input(path, "file", "a JSON object", root.type_name());
  const Keys keys(path, root);

  // The architecture: architectures[0], else model_type.
  std::string arch;
  if (const json* a = keys.find("architectures")) {
    if (!a->is_array() || a->size() != 1 || !(*a)[0].is_string())
      keys.fail("architectures", "one architecture name", a->dump());
    arch = (*a)[0].get<std::string>();
  } else {
    const std::string type = keys.string(root, "model_type", "");
    arch = type == "llama" ? "LlamaForCausalLM" : type == "gpt2" ? "GPT2LMHeadModel" : type;
  }
  ModelConfig c;
  c.name = std::filesystem::path(path).parent_path().filename().string();
  if (c.name.empty()) c.name = path;
  if (arch == "LlamaForCausalLM")
    c = read_llama(keys, c);
  else if (arch == "GPT2LMHeadModel")
    c = read_gpt2(keys, c);
  else
    keys.fail("architectures", "LlamaForCausalLM or GPT2LMHeadModel", "\"" + arch + "\"");
  c.padded_vocab_size = padded_vocab(c.vocab_size);
  validate_model_config(c, path);
  return c;
}

}  // namespace eth

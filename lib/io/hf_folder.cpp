#include "lib/io/hf_folder.hpp"

#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/io/gpt2_bpe.hpp"
#include "lib/io/hf_gpt2.hpp"
#include "lib/io/safetensors.hpp"
#include "lib/io/whole_model.hpp"

namespace eth {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kGpt2Vocab = 50257;
constexpr double kLayerNormEps = 1e-5;  // ETH's layernorm (kernels), GPT-2's

// config.json's dimensions and the model YAML's names for them.
struct Dimension {
  const char* hf;
  const char* yaml;
  int ModelConfig::*value;
};
constexpr Dimension kDimensions[] = {{"vocab_size", "vocab_size", &ModelConfig::vocab_size},
                                     {"n_positions", "max_seq_len", &ModelConfig::max_seq_len},
                                     {"n_embd", "channels", &ModelConfig::channels},
                                     {"n_layer", "num_layers", &ModelConfig::num_layers},
                                     {"n_head", "num_heads", &ModelConfig::num_heads}};

// GPT-2's end-of-text token where the vocabulary is GPT-2's; none in a smaller one.
json end_of_text(const ModelConfig& m) { return m.vocab_size > kEndOfText ? json(kEndOfText) : json(nullptr); }

json gpt2_config(const ModelConfig& m) {
  json c = {{"architectures", {"GPT2LMHeadModel"}},
            {"model_type", "gpt2"},
            {"activation_function", "gelu_new"},  // GELU's tanh approximation, ETH's
            {"n_inner", nullptr},                 // 4 n_embd
            {"layer_norm_epsilon", kLayerNormEps},
            {"n_ctx", m.max_seq_len},
            {"attn_pdrop", 0.0}, {"embd_pdrop", 0.0}, {"resid_pdrop", 0.0},  // ETH trains without dropout
            {"initializer_range", 0.02},
            {"scale_attn_weights", true},
            {"scale_attn_by_inverse_layer_idx", false},
            {"reorder_and_upcast_attn", false},
            {"tie_word_embeddings", true},
            {"use_cache", true},
            {"bos_token_id", end_of_text(m)},
            {"eos_token_id", end_of_text(m)},
            {"torch_dtype", "float32"}};
  for (const Dimension& d : kDimensions) c[d.hf] = m.*d.value;
  return c;
}

void write_json(const fs::path& path, const json& value) {
  std::ofstream out(path);
  out << value.dump(2) << '\n';
  if (!out.flush()) fail_input(path.string(), "--out", "a file that can be written in full", "a write error");
}

void copy_into(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) fail_input(to.string(), "--out", "a copy of " + from.string(), ec.message());
}

// Writes the tokenizer files, or returns why not.
std::string write_tokenizer(const ModelConfig& m, const fs::path& dir, const std::string& tokenizer_dir) {
  if (m.vocab_size != kGpt2Vocab)
    return strprintf("no tokenizer written: the model's vocab_size %d is not GPT-2's %d", m.vocab_size, kGpt2Vocab);
  const Gpt2Bpe check(tokenizer_dir);  // an InputError unless the two files are GPT-2's
  copy_into(fs::path(tokenizer_dir) / "encoder.json", dir / "vocab.json");
  copy_into(fs::path(tokenizer_dir) / "vocab.bpe", dir / "merges.txt");  // "#version: 0.2" first, as HF's
  write_json(dir / "tokenizer_config.json",
             {{"tokenizer_class", "GPT2Tokenizer"}, {"model_max_length", m.max_seq_len},
              {"bos_token", "<|endoftext|>"}, {"eos_token", "<|endoftext|>"}, {"unk_token", "<|endoftext|>"},
              {"add_prefix_space", false}, {"add_bos_token", false}, {"errors", "replace"}});
  return "";
}

// An InputError naming the field and both values unless config.json describes `m`'s GPT-2.
void check_config(const fs::path& path, const ModelConfig& m) {
  std::ifstream in(path);
  if (!in) fail_input(path.string(), "config.json", "a GPT2Config beside model.safetensors", "no readable file");
  json c;
  try {
    c = json::parse(in);
  } catch (const json::parse_error& e) {
    fail_input(path.string(), "config.json", "JSON", strprintf("a parse error at byte %zu", e.byte));
  } catch (const json::exception& e) {  // a number past double's range throws out_of_range
    fail_input(path.string(), "config.json", "JSON with its numbers in range", e.what());
  }
  if (!c.is_object()) fail_input(path.string(), "config.json", "a JSON object", c.type_name());
  const std::string yaml = ", as in the model YAML (" + m.name + ")";
  for (const Dimension& d : kDimensions) {
    const auto it = c.find(d.hf);
    const std::string expected = std::to_string(m.*d.value) + yaml + "'s " + d.yaml;
    if (it == c.end()) fail_input(path.string(), d.hf, expected, "none");
    if (!it->is_number_integer() || it->get<int64_t>() != m.*d.value) fail_input(path.string(), d.hf, expected, it->dump());
  }
  // What else makes transformers compute another function than ETH's GPT-2 (defaults as GPT2Config's).
  const auto require = [&](const char* field, const json& fallback, const std::vector<json>& allowed, const char* what) {
    const json v = c.value(field, fallback);
    for (const json& a : allowed)
      if (v == a) return;
    fail_input(path.string(), field, what, v.dump());
  };
  require("model_type", "gpt2", {"gpt2"}, "\"gpt2\"");
  require("activation_function", "gelu_new", {"gelu_new", "gelu_pytorch_tanh"}, "\"gelu_new\" (GELU's tanh approximation, ETH's)");
  require("n_inner", nullptr, {nullptr, 4 * m.channels}, ("null or 4 n_embd = " + std::to_string(4 * m.channels)).c_str());
  require("layer_norm_epsilon", kLayerNormEps, {kLayerNormEps}, "1e-05 (ETH's layernorm)");
  require("tie_word_embeddings", true, {true}, "true (ETH's LM head is wte)");
  require("scale_attn_weights", true, {true}, "true (scores scaled by 1/sqrt(head size))");
  require("scale_attn_by_inverse_layer_idx", false, {false}, "false");
}

}  // namespace

std::string export_hf_model(const std::string& checkpoint_path, const ModelConfig& model, const std::string& dir,
                            const std::string& tokenizer_dir) {
  const std::vector<float> whole = read_whole_params(checkpoint_path, model);  // (P)
  if (!is_rank_zero()) return "";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail_input(dir, "--out", "a folder that can be created", ec.message());
  std::vector<std::vector<float>> transposed;
  write_safetensors((fs::path(dir) / "model.safetensors").string(), hf_gpt2_tensors(model, whole, transposed),
                    {{"format", "pt"}});  // transformers loads only files that say they are PyTorch's
  write_json(fs::path(dir) / "config.json", gpt2_config(model));
  write_json(fs::path(dir) / "generation_config.json",
             {{"bos_token_id", end_of_text(model)}, {"eos_token_id", end_of_text(model)}});
  return write_tokenizer(model, dir, tokenizer_dir);
}

std::vector<float> read_hf_model(const std::string& dir, const ModelConfig& model) {
  check_config(fs::path(dir) / "config.json", model);
  SafetensorsReader file((fs::path(dir) / "model.safetensors").string());
  return read_hf_gpt2_tensors(file, model);
}

void import_hf_model(const std::string& dir, const ModelConfig& model, const std::string& checkpoint_path) {
  write_step0_checkpoint(checkpoint_path, model, read_hf_model(dir, model));
}

}  // namespace eth

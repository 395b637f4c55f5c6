#include "lib/io/hf_folder.hpp"

#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/io/gpt2_bpe.hpp"
#include "lib/io/hf_gpt2.hpp"
#include "lib/io/hf_llama.hpp"
#include "lib/io/hf_weights.hpp"
#include "lib/io/safetensors.hpp"
#include "lib/io/whole_model.hpp"
#include "lib/model/hf_model_config.hpp"
#include "lib/model/stage.hpp"

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

// Llama 3's vocabulary (128,256 tokens): <|begin_of_text|>, and <|end_of_text|> and <|eot_id|>.
constexpr int kLlama3Vocab = 128256;
const json kLlama3Bos = 128000, kLlama3Eos = {128001, 128009};

const char* torch_dtype(SafetensorsDtype dtype) { return dtype == SafetensorsDtype::bf16 ? "bfloat16" : "float32"; }

// LlamaConfig with every key transformers reads to build the model ETH computes; the rotary
// scaling in the older rope_scaling spelling, which transformers 4 and 5 both read.
json llama_config(const ModelConfig& m, SafetensorsDtype dtype) {
  const bool llama3 = m.vocab_size == kLlama3Vocab;
  json rope = nullptr;
  if (m.rope_scaling.enabled())
    rope = {{"rope_type", "llama3"},
            {"factor", m.rope_scaling.factor},
            {"low_freq_factor", m.rope_scaling.low_freq_factor},
            {"high_freq_factor", m.rope_scaling.high_freq_factor},
            {"original_max_position_embeddings", m.rope_scaling.original_max_position}};
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", m.vocab_size},
          {"hidden_size", m.channels},
          {"intermediate_size", m.ffn_channels},
          {"num_hidden_layers", m.num_layers},
          {"num_attention_heads", m.num_heads},
          {"num_key_value_heads", m.num_kv_heads},
          {"head_dim", m.head_dim},
          {"max_position_embeddings", m.max_seq_len},
          {"hidden_act", "silu"},
          {"rms_norm_eps", m.norm_eps},
          {"rope_theta", m.rope_theta},
          {"rope_scaling", rope},
          {"attention_bias", m.attention_bias},
          {"attention_dropout", 0.0},
          {"mlp_bias", m.mlp_bias},
          {"tie_word_embeddings", m.tied_head},
          {"pretraining_tp", 1},
          {"initializer_range", 0.02},
          {"use_cache", true},
          {"bos_token_id", llama3 ? kLlama3Bos : json(nullptr)},
          {"eos_token_id", llama3 ? kLlama3Eos : json(nullptr)},
          {"torch_dtype", torch_dtype(dtype)}};
}

void write_json(const std::string& path, const json& value) {
  std::ofstream out(path);
  out << value.dump(2) << '\n';
  if (!out.flush()) fail_input(path, "--out", "a file that can be written in full", "a write error");
}

void copy_into(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) fail_input(to.string(), "--out", "a copy of " + from.string(), ec.message());
}

// Writes the tokenizer files, or returns why not.
std::string write_tokenizer(const ModelConfig& m, StagedFiles& files, const std::string& tokenizer_dir) {
  if (m.family != ModelFamily::gpt2 || m.vocab_size != kGpt2Vocab)
    return strprintf("no tokenizer written: the model is not GPT-2 with its vocabulary of %d", kGpt2Vocab);
  const Gpt2Bpe check(tokenizer_dir);  // an InputError unless the two files are GPT-2's
  copy_into(fs::path(tokenizer_dir) / "encoder.json", files.path("vocab.json"));
  copy_into(fs::path(tokenizer_dir) / "vocab.bpe", files.path("merges.txt"));  // "#version: 0.2" first, as HF's
  write_json(files.path("tokenizer_config.json"),
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

// An InputError naming the key and both values unless config.json (read as a ModelConfig) is
// `m`'s Llama. The vocabulary's padding is ETH's own: not compared.
void check_llama_config(const std::string& path, const ModelConfig& m) {
  const ModelConfig c = load_hf_model_config(path);
  const std::string yaml = " (the model, " + m.name + ")";
  const auto same = [&](const char* key, const auto& folder, const auto& ours) {
    if (folder != ours) fail_input(path, key, json(ours).dump() + yaml, json(folder).dump());
  };
  same("architectures", std::string(family_name(c.family)), std::string(family_name(m.family)));
  same("vocab_size", c.vocab_size, m.vocab_size);
  same("max_position_embeddings", c.max_seq_len, m.max_seq_len);
  same("hidden_size", c.channels, m.channels);
  same("intermediate_size", c.ffn_channels, m.ffn_channels);
  same("num_hidden_layers", c.num_layers, m.num_layers);
  same("num_attention_heads", c.num_heads, m.num_heads);
  same("num_key_value_heads", c.num_kv_heads, m.num_kv_heads);
  same("head_dim", c.head_dim, m.head_dim);
  same("rms_norm_eps", c.norm_eps, m.norm_eps);
  same("rope_theta", c.rope_theta, m.rope_theta);
  same("rope_scaling.factor", c.rope_scaling.factor, m.rope_scaling.factor);
  if (m.rope_scaling.enabled()) {
    same("rope_scaling.low_freq_factor", c.rope_scaling.low_freq_factor, m.rope_scaling.low_freq_factor);
    same("rope_scaling.high_freq_factor", c.rope_scaling.high_freq_factor, m.rope_scaling.high_freq_factor);
    same("rope_scaling.original_max_position_embeddings", c.rope_scaling.original_max_position,
         m.rope_scaling.original_max_position);
  }
  same("attention_bias", c.attention_bias, m.attention_bias);
  same("mlp_bias", c.mlp_bias, m.mlp_bias);
  same("tie_word_embeddings", c.tied_head, m.tied_head);
  ModelConfig named = c;  // every other field too, should ModelConfig grow one the keys above miss
  named.name = m.name;
  named.padded_vocab_size = m.padded_vocab_size;
  if (!(named == m)) fail_input(path, "model", describe_model(m) + yaml, describe_model(c));
}

size_t data_bytes(const std::vector<SafetensorsTensor>& tensors, SafetensorsDtype dtype) {
  size_t bytes = 0;
  for (const SafetensorsTensor& t : tensors) {
    size_t n = dtype_size(dtype);
    for (size_t d : t.shape) n *= d;
    bytes += n;
  }
  return bytes;
}

}  // namespace

void check_converts(const ModelConfig& model, const std::string& model_path, bool hugging_face) {
  Stage::check_computes(model, model_path);
  const ModelConfig gpt2 = gpt2_config(model.name, model.vocab_size, model.padded_vocab_size, model.max_seq_len,
                                       model.num_layers, model.num_heads, model.channels);
  if (!hugging_face && !(model == gpt2))
    fail_input(model_path, "family",
               "gpt2 with GPT-2's parts (llm.c's files hold GPT-2's tensors; a Llama converts with --import-hf and "
               "--export-hf)",
               describe_model(model));
}

std::string export_hf_model(const std::string& checkpoint_path, const ModelConfig& model, const std::string& dir,
                            const std::string& tokenizer_dir, const HfExportOptions& options) {
  const std::vector<float> whole = read_whole_params(checkpoint_path, model);  // (P)
  if (!is_rank_zero()) return "";
  const bool llama = model.family == ModelFamily::llama;
  std::vector<std::vector<float>> transposed;  // GPT-2's Conv1D weights
  const std::vector<SafetensorsTensor> tensors = llama ? hf_llama_tensors(model, whole) : hf_gpt2_tensors(model, whole, transposed);
  if (!llama && data_bytes(tensors, options.dtype) > options.max_shard_bytes)  // GPT-2 folders are read unsharded
    fail_input(dir, "--max-shard-size",
               strprintf("at least %zu bytes (a GPT-2 folder is one model.safetensors)", data_bytes(tensors, options.dtype)),
               std::to_string(options.max_shard_bytes));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail_input(dir, "--out", "a folder that can be created", ec.message());
  StagedFiles files(dir);
  write_hf_weights(files, tensors, options.dtype, options.max_shard_bytes);
  std::string note;
  if (llama) {
    write_json(files.path("config.json"), llama_config(model, options.dtype));
    const bool llama3 = model.vocab_size == kLlama3Vocab;
    write_json(files.path("generation_config.json"), {{"bos_token_id", llama3 ? kLlama3Bos : json(nullptr)},
                                                      {"eos_token_id", llama3 ? kLlama3Eos : json(nullptr)}});
    note = "no tokenizer written: tokenizer.json is the model's own";
  } else {
    json config = gpt2_config(model);
    config["torch_dtype"] = torch_dtype(options.dtype);
    write_json(files.path("config.json"), config);
    write_json(files.path("generation_config.json"),
               {{"bos_token_id", end_of_text(model)}, {"eos_token_id", end_of_text(model)}});
    note = write_tokenizer(model, files, tokenizer_dir);
  }
  files.commit();
  return note;
}

std::vector<float> read_hf_model(const std::string& dir, const ModelConfig& model) {
  if (model.family == ModelFamily::llama) {
    check_llama_config((fs::path(dir) / "config.json").string(), model);
    HfWeights files(dir);
    return read_hf_llama_tensors(files, model);
  }
  check_config(fs::path(dir) / "config.json", model);
  SafetensorsReader file((fs::path(dir) / "model.safetensors").string());
  return read_hf_gpt2_tensors(file, model);
}

void import_hf_model(const std::string& dir, const ModelConfig& model, const std::string& checkpoint_path) {
  write_step0_checkpoint(checkpoint_path, model, read_hf_model(dir, model));
}

}  // namespace eth

// The model description (lib/model/model_config.hpp, model_tensors.hpp, hf_model_config.hpp):
// config.json and YAML read into the same fields, what is refused and how, and the one tensor
// list agreeing with the layout that places it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "lib/base/input_error.hpp"
#include "lib/model/hf_model_config.hpp"
#include "lib/model/model_tensors.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"

namespace eth::test {
namespace {

namespace fs = std::filesystem;

std::string write_file(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("eth_model_description_" + std::to_string(::getpid()));
  fs::create_directories(dir / name);
  const fs::path path = dir / name / "config.json";
  std::ofstream(path) << text;
  return path.string();
}

// A message naming every fragment, or the test fails showing it.
void expect_refused(const std::string& path, std::initializer_list<const char*> fragments) {
  try {
    load_model_config(path);
    ADD_FAILURE() << path << " was accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    for (const char* f : fragments) EXPECT_NE(what.find(f), std::string::npos) << "missing '" << f << "' in: " << what;
  }
}

const char* kLlamaKeys = R"("hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2,
  "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 512)";

std::string llama(const std::string& extra) {
  return std::string(R"({"architectures": ["LlamaForCausalLM"], )") + kLlamaKeys + (extra.empty() ? "" : ", " + extra) + "}";
}

TEST(ModelDescription, ShippedHuggingFaceConfigs) {
  const ModelConfig smol = load_model_config("inputs/models/hf/SmolLM2-135M/config.json");
  EXPECT_EQ(smol.name, "SmolLM2-135M");
  EXPECT_EQ(smol.family, ModelFamily::llama);
  EXPECT_EQ(smol.num_heads, 9);
  EXPECT_EQ(smol.num_kv_heads, 3);
  EXPECT_EQ(smol.head_dim, 64);
  EXPECT_EQ(smol.ffn_channels, 1536);
  EXPECT_EQ(smol.rope_theta, 100000);
  EXPECT_FALSE(smol.rope_scaling.enabled());
  EXPECT_TRUE(smol.tied_head);
  EXPECT_EQ(smol.padded_vocab_size, 49152);

  const ModelConfig l32 = load_model_config("inputs/models/hf/Llama-3.2-1B/config.json");
  EXPECT_EQ(l32.rope_scaling, (RopeScaling{32, 1, 4, 8192}));
  EXPECT_EQ(l32.rope_theta, 500000);
  EXPECT_EQ(l32.max_seq_len, 131072);

  const ModelConfig tiny = load_model_config("inputs/models/hf/TinyLlama-1.1B/config.json");
  EXPECT_EQ(tiny.rope_theta, 10000);  // absent: transformers' default
  EXPECT_FALSE(tiny.tied_head);
  EXPECT_EQ(tiny.norm_eps, 1e-5);
  EXPECT_EQ(tiny.kv_group(), 8);

  for (const char* name : {"SmolLM2-360M", "Llama-2-7B", "Llama-3-8B"})
    EXPECT_NO_THROW(load_model_config(std::string("inputs/models/hf/") + name + "/config.json")) << name;
}

// transformers 5's rope_parameters and the older "type" spelling read as rope_scaling does.
TEST(ModelDescription, RopeSpellings) {
  const ModelConfig newer = load_model_config(write_file(
      "rope-parameters", llama(R"("rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
        "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})")));
  EXPECT_EQ(newer.rope_theta, 500000);
  EXPECT_EQ(newer.rope_scaling, (RopeScaling{8, 1, 4, 8192}));
  const ModelConfig older = load_model_config(write_file(
      "rope-type", llama(R"("rope_theta": 5e5, "rope_scaling": {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})")));
  ModelConfig older_named = older;
  older_named.name = newer.name;  // each is named for its folder
  EXPECT_EQ(older_named, newer) << describe_model(older) << " vs " << describe_model(newer);
}

TEST(ModelDescription, RefusesWhatItDoesNotCompute) {
  expect_refused(write_file("yarn", llama(R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0})")),
                 {"yarn/config.json", "rope_scaling.rope_type", "\"yarn\"", "\"llama3\""});
  expect_refused(write_file("gelu", llama(R"("hidden_act": "gelu")")), {"hidden_act", "\"gelu\"", "silu"});
  expect_refused(write_file("kv", std::string(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 256,
                 "num_attention_heads": 8, "num_key_value_heads": 3})")),
                 {"num_key_value_heads", "a divisor of num_attention_heads (8)", "got 3"});
  expect_refused(write_file("arch", R"({"architectures": ["MistralForCausalLM"]})"),
                 {"architectures", "LlamaForCausalLM or GPT2LMHeadModel", "MistralForCausalLM"});
  expect_refused(write_file("dropout", llama(R"("attention_dropout": 0.1)")), {"attention_dropout", "0.1"});
  expect_refused(write_file("interleaved", llama(R"("rope_interleaved": true)")), {"rope_interleaved", "rotate-half"});
  expect_refused(write_file("size", llama(R"("hidden_size": "wide")")), {"hidden_size", "an integer", "\"wide\""});
  expect_refused(write_file("syntax", "{\"hidden_size\": "), {"syntax/config.json", "a JSON config"});
}

// A GPT-2 config.json describes what the YAML does.
TEST(ModelDescription, Gpt2ConfigJsonEqualsTheYaml) {
  ModelConfig from_json = load_model_config(write_file(
      "gpt2", R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 768, "n_layer": 12, "n_head": 12,
                  "n_positions": 1024, "vocab_size": 50257, "activation_function": "gelu_new"})"));
  ModelConfig from_yaml = load_model_config("inputs/models/gpt2-124m.yaml");
  from_json.name = from_yaml.name;
  EXPECT_EQ(from_json, from_yaml);
  expect_refused(write_file("relu", R"({"architectures": ["GPT2LMHeadModel"], "activation_function": "relu"})"),
                 {"activation_function", "gelu_new", "relu"});
}

TEST(ModelDescription, LlamaYaml) {
  const ModelConfig demo = load_model_config("inputs/models/demo-llama.yaml");
  EXPECT_EQ(demo.family, ModelFamily::llama);
  EXPECT_EQ(demo.norm, NormKind::rmsnorm);
  EXPECT_EQ(demo.positions, PositionKind::rotary);
  EXPECT_EQ(demo.mlp, MlpKind::swiglu);
  EXPECT_EQ(demo.head_dim, 32);
  EXPECT_EQ(demo.num_kv_heads, 2);
  EXPECT_FALSE(demo.attention_bias || demo.mlp_bias || demo.tied_head);
  EXPECT_EQ(describe_model(demo),
            "llama, L 4, C 128, NH 4 / NKV 2, hs 32, FC 352, rmsnorm 1e-05, rotary 10000, swiglu, untied head");
}

// The closed forms the memory and cost models read equal the layout's sizes, for every family
// and every kind of stage (first, middle, last, whole), and a layout's tensors tile its buffer.
TEST(ModelDescription, CountsEqualTheLayout) {
  for (const char* path : {"inputs/models/tiny.yaml", "inputs/models/demo-llama.yaml",
                           "inputs/models/hf/SmolLM2-135M/config.json", "inputs/models/hf/TinyLlama-1.1B/config.json"}) {
    const ModelConfig c = load_model_config(path);
    const int L = c.num_layers;
    for (LayerRange r : {LayerRange{0, L}, LayerRange{0, 1}, LayerRange{1, L - 1}, LayerRange{L - 1, L}}) {
      const ParamLayout layout(c, r);
      EXPECT_EQ(layout.size(), stage_params(c, r)) << path << " [" << r.begin << ", " << r.end << ")";
      size_t at = 0;
      for (const ParamTensor& t : layout.tensors()) {
        EXPECT_EQ(t.offset, at) << path << " " << t.name;
        at += t.size;
      }
      EXPECT_EQ(at, layout.size()) << path;
    }
    EXPECT_EQ(double(ParamLayout(c, {0, L}).size()), model_params(c)) << path;
  }
}

// Untied, the embedding's unit holds wte and the last unit the head: no tied group is needed.
// Tied with rotary positions, unit 0 is empty and wte lies outside every unit.
TEST(ModelDescription, UnitsOfUntiedAndTiedHeads) {
  const ModelConfig untied = load_model_config("inputs/models/demo-llama.yaml");
  const int L = untied.num_layers;
  const ParamLayout whole(untied, {0, L});
  const size_t C = 128, Vp = 50304;
  EXPECT_EQ(whole.unit_offset(0), whole.wte());
  EXPECT_EQ(whole.unit_size(0), Vp * C);  // wte alone: rotary positions store nothing
  EXPECT_EQ(whole.unit_offset(L + 1), whole.lnf_w());
  EXPECT_EQ(whole.unit_size(L + 1), C + Vp * C);  // RMSNorm's weight, then lm_head_w
  EXPECT_EQ(whole.head_wte(), whole.lnf_w() + C);
  EXPECT_EQ(whole.lnf_b(), ParamLayout::kAbsent);
  EXPECT_EQ(whole.tensors().back().name, "lm_head_w");
  EXPECT_EQ(whole.unit_offset(L + 1) + whole.unit_size(L + 1), whole.size());
  EXPECT_EQ(whole.layer_offsets().qkv_b, LayerOffsets::kAbsent);
  EXPECT_EQ(whole.layer_offsets().fc_w + (2 * 352) * C, whole.layer_offsets().fcproj_w);  // gate and up

  const ModelConfig smol = load_model_config("inputs/models/hf/SmolLM2-135M/config.json");
  const ParamLayout last(smol, {smol.num_layers - 1, smol.num_layers});
  EXPECT_EQ(ParamLayout(smol, {0, 1}).unit_size(0), 0u);
  EXPECT_EQ(last.unit_size(smol.num_layers + 1), 576u);  // the final norm; the head's wte is the tied group's
  EXPECT_EQ(last.tensors().back().name, "wte");
}

// The stage computes both families; it refuses in one line a layernorm eps its kernels do not
// hold (GPT-2's 1e-5 is compiled in; RMSNorm's eps is a parameter).
TEST(ModelDescription, StageRefusesALayernormEpsItsKernelsLack) {
  EXPECT_NO_THROW(Stage::check_computes(load_model_config("inputs/models/tiny.yaml"), "tiny.yaml"));
  ModelConfig llama = load_model_config("inputs/models/demo-llama.yaml");
  llama.norm_eps = 1e-6;
  EXPECT_NO_THROW(Stage::check_computes(llama, "demo-llama.yaml"));
  ModelConfig gpt2 = load_model_config("inputs/models/tiny.yaml");
  gpt2.norm_eps = 1e-6;
  try {
    Stage::check_computes(gpt2, "tiny.yaml");
    ADD_FAILURE() << "a layernorm eps of 1e-6 was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("tiny.yaml: norm_eps: expected 1e-05 with layernorm", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace eth::test

// Reading a model: a Hugging Face config.json (lib/model/hf_model_config.hpp) or a model YAML.
// Apart from model_config.cpp so that what needs the fields alone (the GPU bundle's stage) does
// not need a YAML parser.
#include "lib/base/input_error.hpp"
#include "lib/base/yaml_fields.hpp"
#include "lib/model/hf_model_config.hpp"
#include "lib/model/model_config.hpp"

namespace eth {
namespace {

constexpr long long kMaxSize = 1LL << 30;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A YAML field naming one of `names` (indexed by the enum's value).
template <class Enum, size_t N>
Enum as_choice(const yaml::Field& field, const char* const (&names)[N]) {
  const std::string v = field.as_string();
  std::string all;
  for (size_t i = 0; i < N; i++) {
    if (v == names[i]) return static_cast<Enum>(i);
    all += (i ? (i + 1 == N ? " or " : ", ") : "") + std::string(names[i]);
  }
  field.fail(all, v);
}

// A model YAML: the shape, then the family's parts, each overridable by its own key.
ModelConfig load_model_yaml(const std::string& path) {
  const yaml::Field root = yaml::load_file(path, "model");
  if (!root.node.IsMap()) root.fail("a mapping of model fields", root.text());
  ModelConfig c = gpt2_config(root.has("name") ? root.child("name").as_string() : path,
                              root.child("vocab_size").as_int(1, kMaxSize),
                              root.child("padded_vocab_size").as_int(1, kMaxSize),
                              root.child("max_seq_len").as_int(1, kMaxSize), root.child("num_layers").as_int(1, kMaxSize),
                              root.child("num_heads").as_int(1, kMaxSize), root.child("channels").as_int(1, kMaxSize));
  if (root.has("family")) c.family = as_choice<ModelFamily>(root.child("family"), kFamilyNames);
  if (c.family == ModelFamily::llama) {
    // Llama's parts (transformers' LlamaConfig defaults but the MLP width, which has none here).
    c.norm = NormKind::rmsnorm;
    c.norm_eps = 1e-6;
    c.positions = PositionKind::rotary;
    c.mlp = MlpKind::swiglu;
    c.attention_bias = c.mlp_bias = c.tied_head = false;
    c.ffn_channels = root.child("ffn_channels").as_int(1, kMaxSize);
  }
  auto read = [&root](const char* key, auto&& read_as) {
    if (root.has(key)) read_as(root.child(key));
  };
  read("num_kv_heads", [&c](const yaml::Field& f) { c.num_kv_heads = f.as_int(1, kMaxSize); });
  read("head_dim", [&c](const yaml::Field& f) { c.head_dim = f.as_int(1, kMaxSize); });
  read("ffn_channels", [&c](const yaml::Field& f) { c.ffn_channels = f.as_int(1, kMaxSize); });
  read("norm", [&c](const yaml::Field& f) { c.norm = as_choice<NormKind>(f, kNormNames); });
  read("norm_eps", [&c](const yaml::Field& f) { c.norm_eps = f.as_double(1e-30); });
  read("positions", [&c](const yaml::Field& f) { c.positions = as_choice<PositionKind>(f, kPositionNames); });
  read("rope_theta", [&c](const yaml::Field& f) { c.rope_theta = f.as_double(1.0); });
  read("rope_scaling", [&c](const yaml::Field& f) {
    c.rope_scaling.factor = f.child("factor").as_double(1.0);
    c.rope_scaling.low_freq_factor = f.child("low_freq_factor").as_double(1e-30);
    c.rope_scaling.high_freq_factor = f.child("high_freq_factor").as_double(1e-30);
    c.rope_scaling.original_max_position = f.child("original_max_position").as_int(1, kMaxSize);
  });
  read("mlp", [&c](const yaml::Field& f) { c.mlp = as_choice<MlpKind>(f, kMlpNames); });
  read("attention_bias", [&c](const yaml::Field& f) { c.attention_bias = f.as_bool(); });
  read("mlp_bias", [&c](const yaml::Field& f) { c.mlp_bias = f.as_bool(); });
  read("tied_head", [&c](const yaml::Field& f) { c.tied_head = f.as_bool(); });
  // Widths left to the shape: given head counts and channels.
  if (!root.has("num_kv_heads")) c.num_kv_heads = c.num_heads;
  if (!root.has("head_dim")) c.head_dim = c.channels % c.num_heads == 0 ? c.channels / c.num_heads : 0;
  validate_model_config(c, path);
  return c;
}

}  // namespace

ModelConfig load_model_config(const std::string& path) {
  return ends_with(path, ".json") ? load_hf_model_config(path) : load_model_yaml(path);
}

}  // namespace eth

#include "lib/model/model_config.hpp"

#include "lib/base/input_error.hpp"
#include "lib/base/yaml_fields.hpp"

namespace eth {

GptConfig load_model_config(const std::string& path) {
  const yaml::Field root = yaml::load_file(path, "model");
  if (!root.node.IsMap()) root.fail("a mapping of model fields", root.text());
  constexpr long long kMax = 1LL << 30;
  GptConfig config;
  config.name = root.has("name") ? root.child("name").as_string() : path;
  config.vocab_size = root.child("vocab_size").as_int(1, kMax);
  config.padded_vocab_size = root.child("padded_vocab_size").as_int(1, kMax);
  config.max_seq_len = root.child("max_seq_len").as_int(1, kMax);
  config.num_layers = root.child("num_layers").as_int(1, kMax);
  config.num_heads = root.child("num_heads").as_int(1, kMax);
  config.channels = root.child("channels").as_int(1, kMax);
  validate_model_config(config, path);
  return config;
}

void validate_model_config(const GptConfig& c, const std::string& where) {
  if (c.padded_vocab_size < c.vocab_size)
    fail_input(where, "padded_vocab_size", ">= vocab_size (" + std::to_string(c.vocab_size) + ")",
               std::to_string(c.padded_vocab_size));
  if (c.channels % c.num_heads != 0)
    fail_input(where, "channels", "a multiple of num_heads (" + std::to_string(c.num_heads) + ")",
               std::to_string(c.channels));
}

}  // namespace eth

#include "lib/model_config.hpp"

#include <yaml-cpp/yaml.h>

#include "lib/input_error.hpp"

namespace eth {
namespace {

int read_positive_int(const YAML::Node& root, const std::string& path, const char* field) {
  const YAML::Node node = root[field];
  if (!node) fail_input(path, field, "a positive integer", "nothing (the field is missing)");
  long long value = 0;
  try {
    value = node.as<long long>();
  } catch (const YAML::Exception&) {
    fail_input(path, field, "a positive integer", "'" + node.as<std::string>("?") + "'");
  }
  if (value <= 0 || value > (1LL << 30)) fail_input(path, field, "a positive integer", std::to_string(value));
  return static_cast<int>(value);
}

}  // namespace

GptConfig load_model_config(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    fail_input(path, "file", "a readable model YAML file", "a file that cannot be opened");
  } catch (const YAML::Exception& e) {
    fail_input(path, "line " + std::to_string(e.mark.line + 1), "valid YAML", e.msg);
  }
  if (!root.IsMap()) fail_input(path, "top level", "a mapping of model fields", "something else");
  GptConfig config;
  config.name = root["name"] ? root["name"].as<std::string>("") : path;
  config.vocab_size = read_positive_int(root, path, "vocab_size");
  config.padded_vocab_size = read_positive_int(root, path, "padded_vocab_size");
  config.max_seq_len = read_positive_int(root, path, "max_seq_len");
  config.num_layers = read_positive_int(root, path, "num_layers");
  config.num_heads = read_positive_int(root, path, "num_heads");
  config.channels = read_positive_int(root, path, "channels");
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

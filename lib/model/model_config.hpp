// The GPT-2 style model shape, read from inputs/models/*.yaml.
#pragma once

#include <cstddef>
#include <string>

namespace eth {

struct GptConfig {
  std::string name;
  int vocab_size = 0;         // V: real tokens
  int padded_vocab_size = 0;  // Vp >= V: rows of the embedding, padded for aligned GEMMs
  int max_seq_len = 0;        // maxT: rows of the position embedding
  int num_layers = 0;         // L
  int num_heads = 0;          // NH
  int channels = 0;           // C

  int head_size() const { return channels / num_heads; }
};

// A contiguous run of transformer layers [begin, end): what a pipeline stage holds.
struct LayerRange {
  int begin = 0;  // first transformer layer held
  int end = 0;    // one past the last

  int count() const { return end - begin; }
  bool operator==(const LayerRange&) const = default;
};

// Reads and validates a model YAML; throws InputError naming the file and field.
GptConfig load_model_config(const std::string& path);

// Checks the invariants (positive sizes, Vp >= V, C divisible by NH); `where` names the source.
void validate_model_config(const GptConfig& config, const std::string& where);

}  // namespace eth

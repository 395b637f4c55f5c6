// The model's shape and the parts its family chooses, read from inputs/models/*.yaml or from a
// Hugging Face config.json (lib/model/hf_model_config.hpp). Two families:
//
//   gpt2:  layernorm with bias, learned positions, GELU MLP of width 4C, as many K/V heads as
//          Q heads, biases everywhere, head tied to the word embedding;
//   llama: RMSNorm, rotary positions (theta, optionally Llama 3's frequency scaling), SwiGLU MLP
//          of its own width, grouped-query attention (NKV K/V heads), no biases unless asked
//          (Qwen2-style q/k/v biases: attention_bias), head tied or untied.
//
// Every field is resolved when loaded: readers never fill in defaults. What the model's tensors
// are, how many FLOPs a token costs and how wide each layer's activations are follows from these
// fields in one place: lib/model/model_tensors.hpp.
#pragma once

#include <cstddef>
#include <string>

namespace eth {

enum class ModelFamily { gpt2, llama };
enum class NormKind { layernorm, rmsnorm };     // layernorm: weight and bias; rmsnorm: weight alone
enum class PositionKind { learned, rotary };    // learned: wpe (maxT, C); rotary: none stored
enum class MlpKind { gelu, swiglu };            // gelu: fc -> GELU -> proj; swiglu: down(silu(gate) * up)

// Llama 3's rotary frequency scaling (transformers' rope_type "llama3"); factor 0: none.
struct RopeScaling {
  double factor = 0;
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  int original_max_position = 8192;

  bool enabled() const { return factor != 0; }
  bool operator==(const RopeScaling&) const = default;
};

struct ModelConfig {
  std::string name;
  ModelFamily family = ModelFamily::gpt2;
  int vocab_size = 0;         // V: real tokens
  int padded_vocab_size = 0;  // Vp >= V: rows of the embedding (and head), padded for aligned GEMMs
  int max_seq_len = 0;        // maxT: longest sequence (rows of wpe when positions are learned)
  int num_layers = 0;         // L
  int num_heads = 0;          // NH: query heads
  int num_kv_heads = 0;       // NKV: key/value heads, NH a multiple of it (NH: multi-head, 1: multi-query)
  int head_dim = 0;           // hs: channels of one head (C / NH unless given)
  int channels = 0;           // C: the residual stream
  int ffn_channels = 0;       // FC: the MLP's hidden width (4C for gpt2)

  NormKind norm = NormKind::layernorm;
  double norm_eps = 1e-5;
  PositionKind positions = PositionKind::learned;
  double rope_theta = 10000;  // rotary only
  RopeScaling rope_scaling;   // rotary only
  MlpKind mlp = MlpKind::gelu;
  bool attention_bias = true;  // biases of q, k, v and (gpt2) of the attention's projection
  bool mlp_bias = true;        // biases of the MLP's matrices
  bool tied_head = true;       // the LM head is the word embedding

  int head_size() const { return head_dim; }
  int q_channels() const { return num_heads * head_dim; }          // NH * hs
  int kv_channels() const { return num_kv_heads * head_dim; }      // NKV * hs
  int qkv_channels() const { return q_channels() + 2 * kv_channels(); }  // q, k, v side by side
  int kv_group() const { return num_heads / num_kv_heads; }        // query heads per K/V head

  bool operator==(const ModelConfig&) const = default;
};

// A contiguous run of transformer layers [begin, end): what a pipeline stage holds.
struct LayerRange {
  int begin = 0;  // first transformer layer held
  int end = 0;    // one past the last

  int count() const { return end - begin; }
  bool operator==(const LayerRange&) const = default;
};

// GPT-2's parts for a model of this shape: what a model YAML without `family` describes.
ModelConfig gpt2_config(std::string name, int vocab_size, int padded_vocab_size, int max_seq_len, int num_layers,
                        int num_heads, int channels);

// Reads and validates a model: a Hugging Face config.json (a path ending in .json) or a model
// YAML (lib/model/model_file.cpp). Throws InputError naming the file, the field and what is
// supported.
ModelConfig load_model_config(const std::string& path);

// Checks the invariants (positive sizes, Vp >= V, heads dividing the channels or a head size
// given, NH a multiple of NKV, the family's parts); `where` names the source.
void validate_model_config(const ModelConfig& config, const std::string& where);

// Family and part names as files spell them, indexed by the enums' values.
extern const char* const kFamilyNames[2];
extern const char* const kNormNames[2];
extern const char* const kPositionNames[2];
extern const char* const kMlpNames[2];
// The same, one at a time ("llama", "rmsnorm", "rotary", "swiglu").
const char* family_name(ModelFamily family);
const char* norm_name(NormKind norm);
const char* positions_name(PositionKind positions);
const char* mlp_name(MlpKind mlp);

// The model in one line for logs and settings tables: "llama, L 30, C 576, NH 9 / NKV 3, hs 64,
// FC 1536, RMSNorm 1e-05, rotary 1e+05, SwiGLU, tied head".
std::string describe_model(const ModelConfig& config);

}  // namespace eth

#include "lib/model/model_config.hpp"

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"

namespace eth {

const char* const kFamilyNames[] = {"gpt2", "llama"};
const char* const kNormNames[] = {"layernorm", "rmsnorm"};
const char* const kPositionNames[] = {"learned", "rotary"};
const char* const kMlpNames[] = {"gelu", "swiglu"};

namespace {

std::string number(double v) { return strprintf("%g", v); }

}  // namespace

ModelConfig gpt2_config(std::string name, int vocab_size, int padded_vocab_size, int max_seq_len, int num_layers,
                        int num_heads, int channels) {
  ModelConfig c;
  c.name = std::move(name);
  c.family = ModelFamily::gpt2;
  c.vocab_size = vocab_size;
  c.padded_vocab_size = padded_vocab_size;
  c.max_seq_len = max_seq_len;
  c.num_layers = num_layers;
  c.num_heads = num_heads;
  c.num_kv_heads = num_heads;
  c.head_dim = num_heads > 0 && channels % num_heads == 0 ? channels / num_heads : 0;
  c.channels = channels;
  c.ffn_channels = 4 * channels;
  return c;
}

void validate_model_config(const ModelConfig& c, const std::string& where) {
  auto positive = [&where](const char* field, int v) {
    if (v < 1) fail_input(where, field, "a positive integer", std::to_string(v));
  };
  positive("vocab_size", c.vocab_size);
  positive("max_seq_len", c.max_seq_len);
  positive("num_layers", c.num_layers);
  positive("num_heads", c.num_heads);
  positive("channels", c.channels);
  positive("ffn_channels", c.ffn_channels);
  if (c.padded_vocab_size < c.vocab_size)
    fail_input(where, "padded_vocab_size", ">= vocab_size (" + std::to_string(c.vocab_size) + ")",
               std::to_string(c.padded_vocab_size));
  if (c.head_dim < 1)  // not given, and the heads do not divide the channels
    fail_input(where, "channels", "a multiple of num_heads (" + std::to_string(c.num_heads) + ") or a head_dim",
               std::to_string(c.channels));
  if (c.num_kv_heads < 1 || c.num_heads % c.num_kv_heads != 0)
    fail_input(where, "num_kv_heads", "a divisor of num_heads (" + std::to_string(c.num_heads) + ")",
               std::to_string(c.num_kv_heads));
  if (c.norm_eps <= 0) fail_input(where, "norm_eps", "a positive number", number(c.norm_eps));
  if (c.positions == PositionKind::rotary && c.head_dim % 2 != 0)
    fail_input(where, "head_dim", "an even number (rotary positions rotate pairs of channels)",
               std::to_string(c.head_dim));
  if (c.positions == PositionKind::rotary && c.rope_theta <= 0)
    fail_input(where, "rope_theta", "a positive number", number(c.rope_theta));
  if (c.rope_scaling.enabled() && c.positions != PositionKind::rotary)
    fail_input(where, "rope_scaling", "none with learned positions", "factor " + number(c.rope_scaling.factor));
  if (c.rope_scaling.enabled() && !(c.rope_scaling.high_freq_factor > c.rope_scaling.low_freq_factor))
    fail_input(where, "rope_scaling.high_freq_factor",
               "> low_freq_factor (" + number(c.rope_scaling.low_freq_factor) + ")",
               number(c.rope_scaling.high_freq_factor));
}

const char* family_name(ModelFamily family) { return kFamilyNames[static_cast<int>(family)]; }
const char* norm_name(NormKind norm) { return kNormNames[static_cast<int>(norm)]; }
const char* positions_name(PositionKind positions) { return kPositionNames[static_cast<int>(positions)]; }
const char* mlp_name(MlpKind mlp) { return kMlpNames[static_cast<int>(mlp)]; }

std::string describe_model(const ModelConfig& c) {
  std::string s = std::string(family_name(c.family)) + ", L " + std::to_string(c.num_layers) + ", C " +
                  std::to_string(c.channels) + ", NH " + std::to_string(c.num_heads);
  if (c.num_kv_heads != c.num_heads) s += " / NKV " + std::to_string(c.num_kv_heads);
  s += ", hs " + std::to_string(c.head_dim) + ", FC " + std::to_string(c.ffn_channels) + ", " + norm_name(c.norm) +
       " " + number(c.norm_eps) + ", " + positions_name(c.positions);
  if (c.positions == PositionKind::rotary) s += " " + number(c.rope_theta);
  if (c.rope_scaling.enabled()) s += " (llama3 x" + number(c.rope_scaling.factor) + ")";
  s += std::string(", ") + mlp_name(c.mlp) + (c.tied_head ? ", tied head" : ", untied head");
  return s;
}

}  // namespace eth

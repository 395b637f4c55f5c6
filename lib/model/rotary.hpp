// Rotary positions' inverse frequencies, as transformers computes them for LlamaForCausalLM:
// inv_freq[i] = theta^(-2i / hs) for i < hs / 2, then, with Llama 3's scaling, frequencies whose
// wavelength passes original_max_position / low_freq_factor divided by `factor`, those below
// original_max_position / high_freq_factor kept, and those between blended smoothly
// (transformers' _compute_llama3_parameters). Computed in double, rounded to fp32 once: the
// kernels take the angle (position x inv_freq) and its cos and sin in fp32.
#pragma once

#include <cstddef>
#include <vector>

#include "lib/model/model_config.hpp"

namespace eth {

std::vector<float> rotary_inverse_frequencies(const ModelConfig& config);  // (hs / 2)

// The floats of that table: hs / 2 with rotary positions, 0 with learned ones.
inline size_t rotary_table_floats(const ModelConfig& config) {
  return config.positions == PositionKind::rotary ? static_cast<size_t>(config.head_dim) / 2 : 0;
}

}  // namespace eth

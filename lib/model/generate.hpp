// The token loop of generation over a Generator (lib/model/generator.hpp): the prompt fills the
// cache, then each new token is sampled from the last position's logits and appended. When the
// context fills the cache, it restarts from its last capacity / 2 tokens (one prefill), so
// generation runs on past the model's context length. Without the cache (use_cache false, for
// comparisons) every token recomputes the whole current context from scratch: the same context
// rule, hence the same tokens up to float rounding.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "lib/model/generator.hpp"
#include "lib/model/sampling.hpp"

namespace eth {

// Called after each new token with the logits (Vp) it was sampled from.
using OnToken = std::function<void(int32_t token, const std::vector<float>& logits)>;

// prompt: 1 to generator.capacity() tokens, each below V. Returns the new tokens: `new_tokens`
// of them, or fewer when one of `end_tokens` comes (it is the last, and on_token sees it).
std::vector<int32_t> generate(Generator& generator, const std::vector<int32_t>& prompt, int new_tokens,
                              Sampler& sampler, bool use_cache = true, const OnToken& on_token = {},
                              const std::vector<int32_t>& end_tokens = {});

}  // namespace eth

#include "lib/model/generate.hpp"

#include <algorithm>
#include <cassert>

namespace eth {

std::vector<int32_t> generate(Generator& generator, const std::vector<int32_t>& prompt, int new_tokens,
                              Sampler& sampler, bool use_cache, const OnToken& on_token,
                              const std::vector<int32_t>& end_tokens) {
  assert(!prompt.empty() && static_cast<int>(prompt.size()) <= generator.capacity());
  std::vector<int32_t> context = prompt, out;  // context: what the cache holds
  const std::vector<float>* logits = &generator.prefill(context);
  for (int i = 0; i < new_tokens; i++) {
    const int32_t token = sampler.next(logits->data());
    out.push_back(token);
    if (on_token) on_token(token, *logits);
    if (i + 1 == new_tokens || std::find(end_tokens.begin(), end_tokens.end(), token) != end_tokens.end()) break;
    const bool full = static_cast<int>(context.size()) == generator.capacity();
    if (full) context.erase(context.begin(), context.end() - generator.capacity() / 2);
    context.push_back(token);
    logits = use_cache && !full ? &generator.step(token) : &generator.prefill(context);
  }
  return out;
}

}  // namespace eth

#include "lib/io/text_generation.hpp"

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/base/utf8.hpp"
#include "lib/model/generate.hpp"

namespace eth {

PromptTokens encode_prompt(const TextTokenizer& tokenizer, std::string text, const ModelConfig& model,
                           const std::string& option) {
  repair_utf8(text);
  const std::vector<int32_t> ids = tokenizer.encode(text);
  for (int32_t id : ids)
    if (id >= model.vocab_size)
      fail_input(option, "token " + std::to_string(id) + " (\"" + std::string(tokenizer.bytes_of(id)) + "\")",
                 strprintf("ids below vocab_size %d of model %s", model.vocab_size, model.name.c_str()),
                 "a token of " + tokenizer.path() + " the model does not have");
  PromptTokens out;
  const size_t keep = std::min(ids.size(), static_cast<size_t>(model.max_seq_len));
  out.dropped = static_cast<int>(ids.size() - keep);
  out.tokens.assign(ids.end() - static_cast<std::ptrdiff_t>(keep), ids.end());
  return out;
}

std::string generate_text(Generator& generator, const TextTokenizer& tokenizer, const std::vector<int32_t>& prompt,
                          int new_tokens, const SamplingOptions& sampling,
                          const std::function<void(const std::string&)>& on_text,
                          const std::function<void(int32_t)>& on_token) {
  Sampler sampler(sampling, generator.config().vocab_size);
  std::string text, pending;  // pending: bytes not yet passed on
  const auto pass = [&](size_t n) {
    if (n == 0) return;
    std::string piece = pending.substr(0, n);
    pending.erase(0, n);
    repair_utf8(piece);
    text += piece;
    if (on_text) on_text(piece);
  };
  generate(generator, prompt, new_tokens, sampler, true,
           [&](int32_t token, const std::vector<float>&) {
             if (on_token) on_token(token);
             pending += tokenizer.bytes_of(token);
             pass(complete_utf8_prefix(pending));
           },
           tokenizer.end_tokens());
  pass(pending.size());  // the end: whatever is left, complete or not
  return text;
}

}  // namespace eth

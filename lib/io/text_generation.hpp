// Text in, text out around the token loop (lib/model/generate.hpp): a prompt in the model's
// tokenizer (lib/io/text_tokenizer.hpp), cut from the left to the model's context, and the new
// tokens decoded as they come, whole UTF-8 characters only (bytes that split one are held back
// until the next token completes it; an invalid sequence becomes U+FFFD), until the tokenizer's
// end token or the token count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/io/text_tokenizer.hpp"
#include "lib/model/generator.hpp"
#include "lib/model/sampling.hpp"

namespace eth {

struct PromptTokens {
  std::vector<int32_t> tokens;  // 1 to max_seq_len of them, each below V
  int dropped = 0;              // tokens cut from the left to fit the context
};

// The tokens of `text` (invalid UTF-8 repaired as eth_tokenize does); an empty text stands for
// the beginning-of-text token (GPT-2's <|endoftext|>), the start of a document. An InputError
// naming `option` when a token is not below the model's vocab_size (a model of another
// vocabulary than the tokenizer's).
PromptTokens encode_prompt(const TextTokenizer& tokenizer, std::string text, const ModelConfig& model,
                           const std::string& option);

// Generates up to `new_tokens` tokens after `prompt`, stopping after an end token of the
// tokenizer, and returns their text; on_text, when given, receives it piece by piece as it
// completes, and on_token each token. Ids past the tokenizer's vocabulary decode to nothing.
std::string generate_text(Generator& generator, const TextTokenizer& tokenizer, const std::vector<int32_t>& prompt,
                          int new_tokens, const SamplingOptions& sampling,
                          const std::function<void(const std::string&)>& on_text = {},
                          const std::function<void(int32_t)>& on_token = {});

}  // namespace eth

// Text in, text out around the token loop (lib/model/generate.hpp): a prompt in GPT-2's BPE,
// cut from the left to the model's context, and the new tokens decoded as they come, whole
// UTF-8 characters only (bytes that split one are held back until the next token completes it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/io/gpt2_bpe.hpp"
#include "lib/model/generator.hpp"
#include "lib/model/sampling.hpp"

namespace eth {

struct PromptTokens {
  std::vector<int32_t> tokens;  // 1 to max_seq_len of them, each below V
  int dropped = 0;              // tokens cut from the left to fit the context
};

// The tokens of `text` (invalid UTF-8 repaired as eth_tokenize does); an empty text stands for
// GPT-2's <|endoftext|>, the start of a document. An InputError naming `option` when a token is
// not below the model's vocab_size (a model of its own vocabulary, not GPT-2's).
PromptTokens encode_prompt(const Gpt2Bpe& bpe, std::string text, const ModelConfig& model, const std::string& option);

// Generates `new_tokens` tokens after `prompt` and returns their text; on_text, when given,
// receives it piece by piece as it completes. Ids past GPT-2's vocabulary decode to nothing.
std::string generate_text(Generator& generator, const Gpt2Bpe& bpe, const std::vector<int32_t>& prompt,
                          int new_tokens, const SamplingOptions& sampling,
                          const std::function<void(const std::string&)>& on_text = {});

}  // namespace eth

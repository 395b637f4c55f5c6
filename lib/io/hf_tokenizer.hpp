// Hugging Face tokenizer.json files, the kinds ETH encodes with (eth_tokenize --tokenizer
// FILE.json), each as tokenizers.js (npm @huggingface/tokenizers) runs it:
//  - byte-level BPE (Llama 3, GPT-2, Qwen2 without a normalizer): no normalizer; pre_tokenizer
//    ByteLevel with its own regex (GPT-2's), or Sequence[Split(a regex of split_patterns.hpp,
//    behavior Isolated), ByteLevel(use_regex false)]; model BPE over the UTF-8 bytes' stand-ins,
//    with ignore_merges (a pre-token that is a token whole is taken as it is);
//  - SentencePiece-style BPE (Llama 2, TinyLlama, Mistral): normalizer Sequence[Prepend "▁",
//    Replace " " -> "▁"], no pre_tokenizer, model BPE with byte_fallback over the characters of
//    the whole document; a character outside the vocabulary becomes its UTF-8 bytes' <0xNN> tokens.
// Merges are "a b" strings or ["a", "b"] pairs. Added tokens must be special ones; they are not
// split out of the text (special-token text in a document is plain text, as llm.c's data
// scripts ask with split_special_tokens). The beginning-of-text token is the post-processor's
// leading special token (TemplateProcessing, also inside a Sequence), or else the added token
// <|begin_of_text|>, <s> or <|endoftext|>. Anything else (WordPiece, Unigram, another
// normalizer, pre-tokenizer or regex): an InputError naming the file and the component.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "lib/io/bpe_merges.hpp"
#include "lib/io/corpus_tokenizer.hpp"
#include "lib/io/split_patterns.hpp"

namespace eth {

struct HfTokenizer {
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  enum class Kind { kByteLevel, kSentencePiece };

  Kind kind = Kind::kByteLevel;
  // Byte-level: the Split regex, or none for ByteLevel's own (GPT-2's, with JavaScript's \s).
  std::optional<SplitPattern> split;
  bool ignore_merges = false;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> vocab;  // model.vocab
  BpeMerges merges;
  uint32_t byte_ids[256] = {};  // byte b's token: its stand-in (byte-level) or <0xNN> (SentencePiece)
  uint32_t begin_of_text = 0;
  // eth_sample's prompts start with begin_of_text: the post-processor puts it first, or it is a
  // beginning-of-text token by name (<|begin_of_text|>, <s>: Llama 3's first tokenizer.json has
  // a ByteLevel post-processor, yet the model saw it first in training), not GPT-2's <|endoftext|>.
  bool prompt_begins = false;
  std::unordered_map<std::string, uint32_t> specials;  // added_tokens: content -> id
  uint64_t vocab_size = 0;      // 1 + the largest id of model.vocab and added_tokens
};

// Reads and checks `path`; an InputError names the file and the component not implemented.
HfTokenizer read_hf_tokenizer(const std::string& path);

// The tokenizer of `path` for eth_tokenize (hf_encoders.cpp).
std::unique_ptr<CorpusTokenizer> open_hf_tokenizer(const std::string& path);
std::unique_ptr<CorpusTokenizer> hf_corpus_tokenizer(HfTokenizer tokenizer);

}  // namespace eth

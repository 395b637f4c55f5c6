// The tokenizer that prompts are encoded with and generated tokens decoded with (eth_sample
// --tokenizer, eth_train's samples): GPT-2's built-in BPE (a folder with encoder.json and
// vocab.bpe), or a Hugging Face tokenizer.json (a file *.json, or a folder holding one; the
// kinds of lib/io/hf_tokenizer.hpp), chosen by tokenizer_json_path (lib/io/corpus_tokenizer.hpp).
//
//   encoding   as eth_tokenize encodes a document, with the beginning-of-text token first where
//              the tokenizer.json's post-processor puts it, or where it is one by name (Llama 3's
//              <|begin_of_text|>, Llama 2's <s>: HfTokenizer::prompt_begins); GPT-2's
//              <|endoftext|> is not put first, by its tokenizer.json or the built-in BPE. An empty
//              text is the beginning-of-text token alone.
//   decoding   each token's bytes: byte-level tokens' stand-ins back to their bytes, SentencePiece
//              "▁" to a space and <0xNN> to byte NN (a decoded text drops its first space, as the
//              decoder's Strip does); a tokenizer.json's special tokens decode to nothing (as
//              transformers' skip_special_tokens), GPT-2's <|endoftext|> to its text as always.
//   end tokens generation stops after one: generation_config.json's eos_token_id (an id or a
//              list) in the tokenizer.json's folder, or else its special tokens among
//              <|end_of_text|>, <|eot_id|>, </s>, <|endoftext|> and <|im_end|>; none for GPT-2's
//              built-in BPE (its generation runs to the token count, as it always has).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/io/corpus_tokenizer.hpp"

namespace eth {

class TextTokenizer {
 public:
  // An InputError names the file and the field: a missing or unreadable tokenizer.json, a kind
  // not implemented, a generation_config.json whose eos_token_id is not an id of the vocabulary.
  explicit TextTokenizer(const std::string& path);

  const std::string& path() const { return path_; }  // the tokenizer.json, or GPT-2's folder
  bool is_builtin_gpt2() const { return builtin_gpt2_; }
  uint64_t vocab_size() const { return bytes_.size(); }  // every id it encodes to is below it
  const std::vector<int32_t>& end_tokens() const { return end_tokens_; }

  std::vector<int32_t> encode(std::string_view text) const;
  // What token `id` decodes to (nothing for ids past the vocabulary). A token may end inside a
  // UTF-8 character that the next one completes.
  std::string_view bytes_of(int32_t id) const;
  std::string decode(const std::vector<int32_t>& tokens) const;

 private:
  std::string path_;
  bool builtin_gpt2_ = false;
  bool strip_first_space_ = false;  // SentencePiece's decoder
  bool begin_first_ = false;        // encode puts begin_of_text first
  std::unique_ptr<CorpusTokenizer> corpus_;
  std::vector<std::string> bytes_;  // by id
  std::vector<int32_t> end_tokens_;
};

}  // namespace eth

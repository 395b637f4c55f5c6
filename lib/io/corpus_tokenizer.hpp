// What eth_tokenize asks of a tokenizer: the beginning-of-text token put before each document,
// the vocabulary's size (it picks the shard layout), where a document may be cut so that its
// pieces encode on several threads as the whole would, and one encoder per thread (each keeps
// its own cache of pre-tokens, so threads share nothing mutable).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/io/gpt2_bpe.hpp"

namespace eth {

class PieceEncoder {
 public:
  virtual ~PieceEncoder() = default;
  // Appends the ids of text[begin, end) of a document `text`; begin and end are 0, text.size()
  // or places where is_safe_cut holds.
  virtual void encode(std::string_view text, size_t begin, size_t end, std::vector<uint32_t>& out) = 0;
};

class CorpusTokenizer {
 public:
  virtual ~CorpusTokenizer() = default;
  virtual uint32_t begin_of_text() const = 0;
  virtual uint64_t vocab_size() const = 0;  // every id is below it
  // Whether a pre-token boundary falls at text[pos] (0 < pos < text.size()) whatever precedes it.
  virtual bool is_safe_cut(std::string_view text, size_t pos) const = 0;
  virtual std::unique_ptr<PieceEncoder> encoder() const = 0;
};

// The tokenizer.json that `path` names: the path itself when it ends in .json, or the folder's
// tokenizer.json when the folder holds one; "" for anything else (GPT-2's folder, encoder.json
// and vocab.bpe).
std::string tokenizer_json_path(const std::string& path);

// The tokenizer at `path`: a Hugging Face tokenizer.json (tokenizer_json_path,
// lib/io/hf_tokenizer.hpp), or else a folder with GPT-2's encoder.json and vocab.bpe
// (lib/io/gpt2_bpe.hpp). An InputError names the file and what is wrong or not implemented.
std::unique_ptr<CorpusTokenizer> open_corpus_tokenizer(const std::string& path);
// GPT-2's built-in BPE over `bpe`'s files.
std::unique_ptr<CorpusTokenizer> gpt2_corpus_tokenizer(Gpt2Bpe bpe);

}  // namespace eth

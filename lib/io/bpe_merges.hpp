// A BPE model's merge table as Hugging Face's tokenizers apply it (Rust's Word::merge_all and
// tokenizers.js's BPE.bpe alike): over a word of symbols, repeatedly merge the pair of lowest
// rank, the leftmost of equal ones, until no neighbouring pair has a merge. With a heap and a
// linked list, O(n log n) in the word's length: a SentencePiece-style word is a whole document.
// (GPT-2's built-in BPE, gpt2_bpe.cpp, keeps its reference's own order, which differs for the
// pairs its comma-keyed table aliases.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace eth {

class BpeMerges {
 public:
  // Records that (left, right) merges into `result` with `rank`; a pair given again takes the
  // later rank and result, as both libraries' maps do.
  void add(uint32_t left, uint32_t right, uint32_t result, uint32_t rank) { merges_[key(left, right)] = {rank, result}; }
  size_t size() const { return merges_.size(); }
  void reserve(size_t merges) { merges_.reserve(merges); }

  // Merges `word` (symbol ids, left to right) in place.
  void merge(std::vector<uint32_t>& word) const;

 private:
  struct Merge {
    uint32_t rank, result;
  };
  static uint64_t key(uint32_t left, uint32_t right) { return (uint64_t(left) << 32) | right; }

  std::unordered_map<uint64_t, Merge> merges_;
};

}  // namespace eth

// Training data: llm.c token shards and a deterministic stream of samples drawn from them.
//
// Shard format (llm.c): a header of 256 little-endian int32 (magic 20240520, version 1, token
// count, rest unused), then that many uint16 GPT-2 token ids.
//
// A sample is a window of T + 1 consecutive tokens inside one shard (inputs are the first T,
// targets the last T); the windows of T tokens are laid end to end and never cross a shard.
// Sample g of the stream is window perm_e(g mod W) of epoch e = g / W, where perm_e is a
// shuffle seeded by (seed, e). It is a pure function of (data, T, seed, g): it does not depend
// on the plan, so sample i of step s is the same for every way of splitting the batch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace eth {

struct TokenShard {
  std::string path;
  std::vector<uint16_t> tokens;
};

// Reads and validates a shard: magic, version, size against the header's count, and every
// token id below vocab_size. Throws InputError naming the file and field.
TokenShard load_token_shard(const std::string& path, int vocab_size);

class SampleStream {
 public:
  // shuffle = false keeps windows in file order (for validation).
  SampleStream(std::vector<TokenShard> shards, int T, uint64_t seed, bool shuffle);

  uint64_t windows() const { return total_windows_; }

  // Writes sample g's inputs (T) and targets (T).
  void sample(uint64_t g, int32_t* inputs, int32_t* targets);

 private:
  const uint16_t* window_start(uint64_t w) const;
  void build_permutation(uint64_t epoch);

  std::vector<TokenShard> shards_;
  std::vector<uint64_t> first_window_;  // per shard: its first global window index
  int T_;
  uint64_t seed_;
  bool shuffle_;
  uint64_t total_windows_ = 0;
  uint64_t epoch_ = UINT64_MAX;         // epoch whose permutation is cached
  std::vector<uint64_t> permutation_;
};

}  // namespace eth

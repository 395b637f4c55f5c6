// Training data: llm.c token shards and a deterministic stream of samples drawn from them.
//
// Shard formats (llm.c, dev/data/data_common.py): a header of 256 little-endian int32 (magic,
// version, token count, rest unused), then that many token ids: GPT-2's layout (magic 20240520,
// version 1) holds uint16 ids, Llama 3's (magic 20240801, version 7) uint32 ids, for
// vocabularies past 65,536 ids. Both are read; the header says which.
//
// A sample is a window of T + 1 consecutive tokens inside one shard (inputs are the first T,
// targets the last T); the windows of T tokens are laid end to end and never cross a shard.
// Sample g of the stream is window perm_e(g mod W) of epoch e = g / W, where perm_e is a
// shuffle seeded by (seed, e). It is a pure function of (data, T, seed, g): it does not depend
// on the plan, so sample i of step s is the same for every way of splitting the batch.
//
// Shards are checked whole when loaded, then read a window at a time (as llm.c's loader does):
// a rank holds no copy of its data, and a shard that shrinks under a running job (a truncated
// or replaced file) is an error naming the file at the first read past its end, not stale data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace eth {

constexpr size_t kShardHeaderInts = 256;

// One of llm.c's two shard layouts.
struct ShardLayout {
  int32_t magic, version;
  int token_bytes;  // bytes of one token id: 2 (uint16) or 4 (uint32)
};
constexpr ShardLayout kShardLayout16 = {20240520, 1, 2};  // GPT-2's
constexpr ShardLayout kShardLayout32 = {20240801, 7, 4};  // Llama 3's
constexpr int32_t kShardMagic = kShardLayout16.magic;
constexpr int32_t kShardVersion = kShardLayout16.version;

struct TokenShard {
  std::string path;
  uint64_t tokens = 0;   // the header's count
  int token_bytes = 2;   // 2 or 4: the layout its header named
};

// Reads and validates a shard: magic and version (either layout), size against the header's
// count, and every token id below vocab_size. Throws InputError naming the file and field (for
// a token: its position, its id and vocab_size).
TokenShard load_token_shard(const std::string& path, int vocab_size);

class SampleStream {
 public:
  // shuffle = false keeps windows in file order (for validation). Opens every shard.
  SampleStream(std::vector<TokenShard> shards, int T, uint64_t seed, bool shuffle);
  ~SampleStream();
  SampleStream(const SampleStream&) = delete;
  SampleStream& operator=(const SampleStream&) = delete;

  uint64_t windows() const { return total_windows_; }

  // Writes sample g's inputs (T) and targets (T). An InputError naming the shard when its file
  // no longer holds the window.
  void sample(uint64_t g, int32_t* inputs, int32_t* targets);

 private:
  void read_window(uint64_t w);  // into window_
  void build_permutation(uint64_t epoch);

  std::vector<TokenShard> shards_;
  std::vector<int> files_;              // per shard: its open descriptor
  std::vector<char> raw_;               // (T + 1) x 4 bytes: the window as read, 2 or 4 bytes a token
  std::vector<uint32_t> window_;        // (T + 1) the window last read, widened
  std::vector<uint64_t> first_window_;  // per shard: its first global window index
  int T_;
  uint64_t seed_;
  bool shuffle_;
  uint64_t total_windows_ = 0;
  uint64_t epoch_ = UINT64_MAX;         // epoch whose permutation is cached
  std::vector<uint64_t> permutation_;
};

}  // namespace eth

#include "lib/io/token_data.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "lib/base/input_error.hpp"
#include "lib/base/random.hpp"

namespace eth {
namespace {

// Little-endian ids of `token_bytes` bytes each (2 or 4) to uint32.
void widen_tokens(const char* raw, int token_bytes, uint64_t n, uint32_t* out) {
  if (token_bytes == 4) {
    std::memcpy(out, raw, n * 4);
    return;
  }
  for (uint64_t i = 0; i < n; i++) {
    uint16_t id;
    std::memcpy(&id, raw + 2 * i, 2);
    out[i] = id;
  }
}

}  // namespace

TokenShard load_token_shard(const std::string& path, int vocab_size) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail_input(path, "file", "a readable llm.c token shard", "a file that cannot be opened");
  const auto file_bytes = static_cast<uint64_t>(in.tellg());
  const uint64_t header_bytes = kShardHeaderInts * sizeof(int32_t);
  if (file_bytes < header_bytes)
    fail_input(path, "header", std::to_string(header_bytes) + " bytes", std::to_string(file_bytes) + " bytes in the whole file");
  in.seekg(0);
  int32_t header[kShardHeaderInts];
  in.read(reinterpret_cast<char*>(header), header_bytes);
  const ShardLayout layout = header[0] == kShardLayout32.magic ? kShardLayout32 : kShardLayout16;
  if (header[0] != layout.magic)
    fail_input(path, "header[0] (magic)",
               std::to_string(kShardLayout16.magic) + " (uint16 tokens) or " + std::to_string(kShardLayout32.magic) +
                   " (uint32 tokens)",
               std::to_string(header[0]));
  if (header[1] != layout.version)
    fail_input(path, "header[1] (version)", std::to_string(layout.version) + " for magic " + std::to_string(layout.magic),
               std::to_string(header[1]));
  if (header[2] <= 0) fail_input(path, "header[2] (token count)", "a positive count", std::to_string(header[2]));
  const uint64_t count = static_cast<uint64_t>(header[2]);
  const uint64_t expected_bytes = header_bytes + count * uint64_t(layout.token_bytes);
  if (file_bytes != expected_bytes)
    fail_input(path, "size", std::to_string(expected_bytes) + " bytes for the " + std::to_string(count) +
                   " tokens of header[2] (" + std::to_string(layout.token_bytes) + " bytes each)",
               std::to_string(file_bytes) + " bytes");

  // Checked in chunks: the tokens are read again, a window at a time, while training.
  std::vector<char> raw(size_t(1 << 20) * layout.token_bytes);
  std::vector<uint32_t> chunk(1 << 20);
  for (uint64_t first = 0; first < count; first += chunk.size()) {
    const uint64_t n = std::min<uint64_t>(chunk.size(), count - first);
    in.read(raw.data(), static_cast<std::streamsize>(n * layout.token_bytes));
    if (!in) fail_input(path, "tokens", std::to_string(count) + " readable tokens", "a read error");
    widen_tokens(raw.data(), layout.token_bytes, n, chunk.data());
    for (uint64_t i = 0; i < n; i++)
      if (chunk[i] >= uint32_t(vocab_size))
        fail_input(path, "token " + std::to_string(first + i), "an id below vocab_size " + std::to_string(vocab_size),
                   std::to_string(chunk[i]));
  }
  return {path, count, layout.token_bytes};
}

SampleStream::SampleStream(std::vector<TokenShard> shards, int T, uint64_t seed, bool shuffle)
    : shards_(std::move(shards)), raw_(4 * (static_cast<size_t>(T) + 1)), window_(static_cast<size_t>(T) + 1), T_(T), seed_(seed), shuffle_(shuffle) {
  for (const TokenShard& s : shards_) {
    first_window_.push_back(total_windows_);
    const uint64_t windows = (s.tokens - 1) / static_cast<uint64_t>(T);
    if (windows == 0)
      fail_input(s.path, "token count", "at least seq_len + 1 = " + std::to_string(T + 1) + " tokens",
                 std::to_string(s.tokens));
    total_windows_ += windows;
  }
  for (const TokenShard& s : shards_) {
    files_.push_back(open(s.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (files_.back() < 0) fail_input(s.path, "file", "a readable llm.c token shard", "a file that cannot be opened");
  }
}

SampleStream::~SampleStream() {
  for (int fd : files_) close(fd);
}

void SampleStream::read_window(uint64_t w) {
  const auto it = std::upper_bound(first_window_.begin(), first_window_.end(), w);
  const size_t shard = static_cast<size_t>(it - first_window_.begin()) - 1;
  const uint64_t first = (w - first_window_[shard]) * static_cast<uint64_t>(T_);
  const size_t token_bytes = static_cast<size_t>(shards_[shard].token_bytes);
  const size_t bytes = window_.size() * token_bytes;
  const off_t offset = static_cast<off_t>(kShardHeaderInts * sizeof(int32_t) + first * token_bytes);
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = pread(files_[shard], raw_.data() + got, bytes - got,
                            offset + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      struct stat now {};
      fstat(files_[shard], &now);
      fail_input(shards_[shard].path, "tokens " + std::to_string(first) + " to " + std::to_string(first + T_),
                 std::to_string(bytes) + " bytes at offset " + std::to_string(offset) + " of the " +
                     std::to_string(kShardHeaderInts * sizeof(int32_t) + shards_[shard].tokens * token_bytes) +
                     " bytes it had when loaded",
                 "a short read (" + std::to_string(got) + " bytes; the file now has " + std::to_string(now.st_size) +
                     "): it changed under the running job");
    }
    got += static_cast<size_t>(n);
  }
  widen_tokens(raw_.data(), static_cast<int>(token_bytes), window_.size(), window_.data());
}

void SampleStream::build_permutation(uint64_t epoch) {
  permutation_.resize(total_windows_);
  for (uint64_t i = 0; i < total_windows_; i++) permutation_[i] = i;
  // Fisher-Yates with counter-based draws: the same on every machine and compiler.
  const uint64_t stream = mix64(seed_) ^ mix64(epoch + 1);
  for (uint64_t i = total_windows_ - 1; i > 0; i--) {
    const uint64_t j = static_cast<uint64_t>(uniform_at(stream, i) * static_cast<double>(i + 1));
    std::swap(permutation_[i], permutation_[std::min(j, i)]);
  }
  epoch_ = epoch;
}

void SampleStream::sample(uint64_t g, int32_t* inputs, int32_t* targets) {
  const uint64_t epoch = g / total_windows_;
  uint64_t w = g % total_windows_;
  if (shuffle_) {
    if (epoch != epoch_) build_permutation(epoch);
    w = permutation_[w];
  }
  read_window(w);
  for (int i = 0; i < T_; i++) {
    inputs[i] = static_cast<int32_t>(window_[i]);
    targets[i] = static_cast<int32_t>(window_[i + 1]);
  }
}

}  // namespace eth

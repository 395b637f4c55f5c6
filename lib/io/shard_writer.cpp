#include "lib/io/shard_writer.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "lib/base/input_error.hpp"
#include "lib/io/token_data.hpp"

namespace eth {
namespace {

static_assert(std::endian::native == std::endian::little, "llm.c shards are little-endian");

[[noreturn]] void fail_write(const std::string& path, uint64_t bytes, int error) {
  fail_input(path, "write", "a writable file of " + std::to_string(bytes) + " bytes", std::strerror(error));
}

// A device or a pipe (/dev/full, /dev/stdout) is written in place: there is no file to leave
// half-written, and no folder to hold a temporary one.
bool is_special_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

}  // namespace

ShardWriter::~ShardWriter() {
  for (const File& f : files_)
    if (f.temporary != f.path) unlink(f.temporary.c_str());
}

void ShardWriter::write(const std::string& path, const uint32_t* tokens, uint64_t count, const ShardLayout& layout) {
  if (count > uint64_t(INT32_MAX))
    fail_input(path, "token count", "at most " + std::to_string(INT32_MAX) + " tokens per shard (use --shard-tokens)",
               std::to_string(count));
  const std::string temporary = is_special_file(path) ? path : path + ".partial";
  const uint64_t bytes = kShardHeaderInts * sizeof(int32_t) + count * uint64_t(layout.token_bytes);
  FILE* f = std::fopen(temporary.c_str(), "wb");
  if (!f) fail_write(path, bytes, errno);
  files_.push_back({path, temporary});
  int32_t header[kShardHeaderInts] = {layout.magic, layout.version, static_cast<int32_t>(count)};
  bool written = std::fwrite(header, sizeof(header), 1, f) == 1;
  if (layout.token_bytes == 4) {
    written = written && std::fwrite(tokens, sizeof(uint32_t), count, f) == count;
  } else {  // narrowed a chunk at a time
    std::vector<uint16_t> narrow(std::min<uint64_t>(count, uint64_t(1) << 20));
    for (uint64_t first = 0; written && first < count; first += narrow.size()) {
      const uint64_t n = std::min<uint64_t>(narrow.size(), count - first);
      for (uint64_t i = 0; i < n; i++) {
        assert(tokens[first + i] <= UINT16_MAX);
        narrow[i] = static_cast<uint16_t>(tokens[first + i]);
      }
      written = std::fwrite(narrow.data(), sizeof(uint16_t), n, f) == n;
    }
  }
  written = written && std::fflush(f) == 0;
  const int error = errno;
  if (std::fclose(f) != 0 || !written) fail_write(path, bytes, written ? errno : error);
}

void ShardWriter::commit() {
  for (const File& f : files_)
    if (f.temporary != f.path && std::rename(f.temporary.c_str(), f.path.c_str()) != 0)
      fail_input(f.path, "rename from " + f.temporary, "success", std::strerror(errno));
  files_.clear();
}

}  // namespace eth

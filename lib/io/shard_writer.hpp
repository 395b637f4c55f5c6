// Writing llm.c token shards (the format lib/io/token_data.hpp reads) so that a failed run
// leaves nothing half-written: every file goes to a temporary name beside its final one, and
// all are renamed at the end, once every write has succeeded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/io/token_data.hpp"

namespace eth {

class ShardWriter {
 public:
  ShardWriter() = default;
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;
  ~ShardWriter();  // removes the temporary files of a writer never committed

  // Writes count tokens as one shard of `layout` (kShardLayout16: every id must be below 65,536)
  // that commit() will put at path. An InputError naming the file and the system's reason when
  // it cannot be written whole (a full disk, a missing folder).
  void write(const std::string& path, const uint32_t* tokens, uint64_t count, const ShardLayout& layout);

  // Renames every written file to its final name.
  void commit();

 private:
  struct File {
    std::string path, temporary;
  };
  std::vector<File> files_;
};

}  // namespace eth

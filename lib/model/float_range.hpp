// A run of floats inside a flat buffer (a stage's parameters, gradients or moments): the unit in
// which AdamW, optimizer shards and checkpoints address parts of a layout.
#pragma once

#include <cstddef>
#include <vector>

namespace eth {

struct FloatRange {
  size_t offset = 0, size = 0;
  size_t end() const { return offset + size; }
};

inline size_t total_size(const std::vector<FloatRange>& spans) {
  size_t n = 0;
  for (const FloatRange& s : spans) n += s.size;
  return n;
}

}  // namespace eth

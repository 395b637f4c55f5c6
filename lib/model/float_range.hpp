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

// The parts of [0, size) that no span covers; spans ascending and disjoint.
inline std::vector<FloatRange> uncovered(const std::vector<FloatRange>& spans, size_t size) {
  std::vector<FloatRange> gaps;
  size_t at = 0;
  for (const FloatRange& s : spans) {
    if (s.offset > at) gaps.push_back({at, s.offset - at});
    at = s.end();
  }
  if (at < size) gaps.push_back({at, size - at});
  return gaps;
}

}  // namespace eth

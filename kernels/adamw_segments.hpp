// The runs of parameters that one AdamW launch updates (Backend::adamw_update): every part of a
// rank's flat parameter buffer that its optimizer keeps, cut into segments of at most
// kAdamWSegmentFloats floats, so that the GPU gives each segment one thread block and no thread
// has to look up which run it is in. The table is built once (lib/model/optimizer.cpp) and lives
// in the device's memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace eth::kernels {

struct AdamWSegment {
  uint64_t param_offset;   // floats into params, grads and their bf16 copies
  uint64_t moment_offset;  // floats into the moments m and v
  uint32_t size;           // floats, 1 .. kAdamWSegmentFloats
  uint32_t decay;          // 1: weight decay applies (matrices and embeddings), 0: it does not
};
static_assert(sizeof(AdamWSegment) == 24);

// 64 floats per thread of a 256-thread block: a 124M-parameter stage is some 7,600 blocks, and a
// layernorm's 768 parameters one block.
constexpr size_t kAdamWSegmentFloats = 16384;

// Appends the run [param_offset, param_offset + size), its moments from moment_offset, as segments.
inline void append_adamw_segments(std::vector<AdamWSegment>& table, size_t param_offset, size_t moment_offset,
                                  size_t size, bool decay) {
  for (size_t at = 0; at < size; at += kAdamWSegmentFloats)
    table.push_back({param_offset + at, moment_offset + at,
                     static_cast<uint32_t>(std::min(kAdamWSegmentFloats, size - at)), decay ? 1u : 0u});
}

}  // namespace eth::kernels

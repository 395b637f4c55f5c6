// Attention's heads: NH query heads of hs channels sharing NKV key/value heads (grouped-query
// attention; NKV = NH is multi-head, NKV = 1 multi-query). Query head h reads K/V head
// h / (NH / NKV), as transformers' repeat_kv lays them out. A qkv row holds q, k and v side by
// side, (NH + 2 NKV) hs values; an output row NH hs; a K/V cache (B, NKV, Tmax, hs).
#pragma once

#include <cstddef>

#include "kernels/simt/qualifiers.hpp"  // the kernels index by it too

namespace eth::kernels {

struct AttentionHeads {
  int NH = 0;   // query heads
  int NKV = 0;  // key/value heads, NH a multiple of it
  int hs = 0;   // channels of one head

  // GPT-2's: NH heads of C / NH channels, each its own K and V.
  static SIMT_HOST_DEVICE AttentionHeads multi_head(int C, int NH) { return {NH, NH, C / NH}; }

  // Query heads per K/V head, and the K/V head query head h reads.
  SIMT_HOST_DEVICE int group() const { return NH / NKV; }
  SIMT_HOST_DEVICE int kv_head(int h) const { return h / group(); }
  // Values in a qkv row, (NH + 2 NKV) hs, and in an output row, NH hs.
  SIMT_HOST_DEVICE size_t qkv_row() const { return static_cast<size_t>(NH + 2 * NKV) * hs; }
  SIMT_HOST_DEVICE size_t out_row() const { return static_cast<size_t>(NH) * hs; }
  // Offsets within a qkv row: query head h, and K/V head g's key and value.
  SIMT_HOST_DEVICE size_t q(int h) const { return static_cast<size_t>(h) * hs; }
  SIMT_HOST_DEVICE size_t k(int g) const { return static_cast<size_t>(NH + g) * hs; }
  SIMT_HOST_DEVICE size_t v(int g) const { return static_cast<size_t>(NH + NKV + g) * hs; }
};

}  // namespace eth::kernels

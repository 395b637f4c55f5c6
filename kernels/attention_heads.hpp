// Attention's heads: NH query heads of hs channels sharing NKV key/value heads (grouped-query
// attention; NKV = NH is multi-head, NKV = 1 multi-query). Query head h reads K/V head
// h / (NH / NKV), as transformers' repeat_kv lays them out. A qkv row holds q, k and v side by
// side, (NH + 2 NKV) hs values; an output row NH hs; a K/V cache (B, NKV, Tmax, hs).
#pragma once

#include <cstddef>

namespace eth::kernels {

struct AttentionHeads {
  int NH = 0;   // query heads
  int NKV = 0;  // key/value heads, NH a multiple of it
  int hs = 0;   // channels of one head

  // GPT-2's: NH heads of C / NH channels, each its own K and V.
  static AttentionHeads multi_head(int C, int NH) { return {NH, NH, C / NH}; }

  int group() const { return NH / NKV; }                                       // query heads per K/V head
  int kv_head(int h) const { return h / group(); }
  size_t qkv_row() const { return static_cast<size_t>(NH + 2 * NKV) * hs; }    // (NH + 2 NKV) hs
  size_t out_row() const { return static_cast<size_t>(NH) * hs; }              // NH hs
  // Offsets within a qkv row: query head h, and K/V head g's key and value.
  size_t q(int h) const { return static_cast<size_t>(h) * hs; }
  size_t k(int g) const { return static_cast<size_t>(NH + g) * hs; }
  size_t v(int g) const { return static_cast<size_t>(NH + NKV + g) * hs; }
};

}  // namespace eth::kernels

// Pieces every kernel family shares, in the dialect: launch sizes, the deterministic warp and
// block reductions, and the carving of an op's scratch memory. Every reduction adds in a fixed
// order (a butterfly over lanes, then warps in index order), so results are bitwise reproducible
// on the GPU and equal in the interpreter.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "kernels/gpu_ops/scratch.hpp"
#include "kernels/simt/simt.hpp"

namespace eth::kernels::gpu_ops {

using simt::Dim3;
using simt::Float2;
using simt::Global;
using simt::LaunchShape;
using simt::Packed;
using simt::Thread;
constexpr int kWarp = simt::kWarpSize;

inline size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

// Blocks of `threads` for a grid-stride loop over n items; capped, the loop covers the rest.
inline unsigned grid_for(size_t n, int threads) {
  return static_cast<unsigned>(std::clamp<size_t>(ceil_div(n, static_cast<size_t>(threads)), 1, size_t{1} << 20));
}

// The grid-stride loop's first index and stride for this thread.
SIMT_DEVICE size_t global_index(Thread& t) { return t.block_idx().x * size_t{t.block_dim().x} + t.thread_idx().x; }
SIMT_DEVICE size_t grid_stride(Thread& t) { return size_t{t.grid_dim().x} * t.block_dim().x; }

template <typename V>
SIMT_DEVICE V warp_sum(Thread& t, V v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += t.shfl_xor(simt::kFullMask, v, offset);
  return v;
}

SIMT_DEVICE float warp_max(Thread& t, float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = simt::fmaxf_(v, t.shfl_xor(simt::kFullMask, v, offset));
  return v;
}

// Shared memory of the block reductions: one value per warp.
template <typename V>
struct BlockReduceSmem {
  simt::SharedArray<V, kWarp> per_warp;
};

// Sum over the block, returned to every thread. blockDim.x must be a multiple of 32 and at most
// 1024. Ends with a barrier, so `smem` may be reused at once.
template <typename V>
SIMT_DEVICE V block_sum(Thread& t, V v, BlockReduceSmem<V>& smem) {
  const int lane = t.lane(), warp = t.warp(), warps = static_cast<int>(t.block_dim().x) / kWarp;
  v = warp_sum(t, v);
  if (lane == 0) smem.per_warp(warp) = v;
  t.sync();
  V total = lane < warps ? smem.per_warp(lane) : V(0);
  total = warp_sum(t, total);
  t.sync();
  return total;
}

SIMT_DEVICE float block_max(Thread& t, float v, BlockReduceSmem<float>& smem) {
  const int lane = t.lane(), warp = t.warp(), warps = static_cast<int>(t.block_dim().x) / kWarp;
  v = warp_max(t, v);
  if (lane == 0) smem.per_warp(warp) = v;
  t.sync();
  float total = lane < warps ? smem.per_warp(lane) : -INFINITY;
  total = warp_max(t, total);
  t.sync();
  return total;
}


}  // namespace eth::kernels::gpu_ops

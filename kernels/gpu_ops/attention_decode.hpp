// Incremental attention for generation (Backend::attention_decode), the GPU twin of
// kernels/cpu/decode_attention.cpp: one kernel appends the new rows' keys and values to the
// caches (NKV heads: kernels/attention_heads.hpp), a second gives each (sample, query head, new
// query row) one warp that sweeps the cached keys of its K/V head in order with an online
// softmax, in fp32. Each lane owns the head dimensions d = lane + 32 r
// (r < H / 32) of q and of the output accumulator, in registers; a score is the warp sum of the
// lanes' partial dot products, so every lane sees it. Decoding is bound by reading the cache once
// per row: no shared memory, no tensor cores.
#pragma once

#include <stdexcept>
#include <string>

#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {

constexpr int kDecodeWarps = 4;  // warps (query rows) per block

// k_cache/v_cache[b, g, T0 + i, d] = k/v of qkv_new[b, i] for every (b, i, c = g * hs + d): one
// thread per element of the (B, Tn, NKV hs) new keys, grid-stride.
struct DecodeAppendKernel {
  static constexpr const char* kName = "attention_decode_append";
  Global<float> k_cache, v_cache;  // (B, NKV, Tmax, hs)
  Global<const float> qkv_new;     // (B, Tn, (NH + 2 NKV) hs)
  int B, Tn, T0, Tmax;
  AttentionHeads heads;
  SIMT_DEVICE void operator()(Thread& t) const {
    const int hs = heads.hs, width = heads.NKV * hs;  // a row's keys (and values)
    const size_t n = static_cast<size_t>(B) * Tn * width;
    for (size_t e = global_index(t); e < n; e += grid_stride(t)) {
      const int c = static_cast<int>(e % width);
      const size_t bi = e / width;  // b * Tn + i
      const int b = static_cast<int>(bi / Tn), i = static_cast<int>(bi % Tn);
      const size_t at = ((static_cast<size_t>(b) * heads.NKV + c / hs) * Tmax + T0 + i) * hs + c % hs;
      k_cache[at] = qkv_new[bi * heads.qkv_row() + heads.k(0) + c];
      v_cache[at] = qkv_new[bi * heads.qkv_row() + heads.v(0) + c];
    }
  }
};

// Warp w of block x: row r = x * kDecodeWarps + w of the B * NH * Tn rows, ordered (b, h, i);
// query head h reads the cache of K/V head h / (NH / NKV).
template <int H>
struct DecodeKernel {
  static constexpr const char* kName = H == 32 ? "attention_decode<32>" : H == 64 ? "attention_decode<64>"
                                                                                   : "attention_decode<128>";
  Global<float> out;                      // (B, Tn, NH hs)
  Global<const float> k_cache, v_cache;   // (B, NKV, Tmax, hs)
  Global<const float> qkv_new;            // (B, Tn, (NH + 2 NKV) hs)
  int B, Tn, T0, Tmax;
  AttentionHeads heads;
  float scale;
  SIMT_DEVICE void operator()(Thread& t) const {
    constexpr int kPer = H / kWarp;  // dimensions per lane
    const int lane = t.lane();
    const size_t row = static_cast<size_t>(t.block_idx().x) * kDecodeWarps + t.warp();
    if (row >= static_cast<size_t>(B) * heads.NH * Tn) return;  // a whole warp leaves together
    const int hs = heads.hs;
    const int i = static_cast<int>(row % Tn);
    const size_t bh = row / Tn;  // b * NH + h
    const int b = static_cast<int>(bh / heads.NH), h = static_cast<int>(bh % heads.NH);
    const size_t bg = static_cast<size_t>(b) * heads.NKV + heads.kv_head(h);  // its K/V head
    const Global<const float> q = qkv_new + (static_cast<size_t>(b) * Tn + i) * heads.qkv_row() + heads.q(h);
    const Global<const float> k = k_cache + bg * Tmax * hs;  // (Tmax, hs)
    const Global<const float> v = v_cache + bg * Tmax * hs;  // (Tmax, hs)
    float qr[kPer], acc[kPer];
    SIMT_UNROLL
    for (int r = 0; r < kPer; r++) {
      const int d = lane + kWarp * r;
      qr[r] = d < hs ? static_cast<float>(q[d]) : 0.f;
      acc[r] = 0.f;
    }
    float m = -INFINITY, l = 0.f;  // running max and sum of exp(score - m)
    for (int j = 0; j <= T0 + i; j++) {
      float partial = 0.f;
      SIMT_UNROLL
      for (int r = 0; r < kPer; r++) {
        const int d = lane + kWarp * r;
        if (d < hs) partial += qr[r] * static_cast<float>(k[static_cast<size_t>(j) * hs + d]);
      }
      const float s = warp_sum(t, partial) * scale;
      const float m_new = simt::fmaxf_(m, s);
      const float correction = simt::expf_(m - m_new), p = simt::expf_(s - m_new);
      l = l * correction + p;
      SIMT_UNROLL
      for (int r = 0; r < kPer; r++) {
        const int d = lane + kWarp * r;
        acc[r] = acc[r] * correction + (d < hs ? p * static_cast<float>(v[static_cast<size_t>(j) * hs + d]) : 0.f);
      }
      m = m_new;
    }
    const Global<float> o = out + (static_cast<size_t>(b) * Tn + i) * heads.out_row() + heads.q(h);
    SIMT_UNROLL
    for (int r = 0; r < kPer; r++) {
      const int d = lane + kWarp * r;
      if (d < hs) o[d] = acc[r] / l;
    }
  }
};

template <int H, class Launch>
void launch_decode(Launch& launch, float* out, const float* k_cache, const float* v_cache, const float* qkv_new,
                   int B, int Tn, int T0, int Tmax, AttentionHeads heads) {
  const size_t rows = static_cast<size_t>(B) * heads.NH * Tn;
  const float scale = 1.f / std::sqrt(static_cast<float>(heads.hs));
  launch.kernel(DecodeKernel<H>{out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, heads, scale},
                LaunchShape{Dim3(static_cast<unsigned>(ceil_div(rows, kDecodeWarps))), Dim3(kDecodeWarps * kWarp), 0});
}

// out (B, Tn, NH hs) from the new rows qkv_new (B, Tn, (NH + 2 NKV) hs) at positions
// [T0, T0 + Tn), whose keys and values are first appended to k_cache, v_cache (B, NKV, Tmax, hs).
template <class Launch>
void attention_decode(Launch& launch, float* out, float* k_cache, float* v_cache, const float* qkv_new, int B, int Tn,
                      int T0, int Tmax, AttentionHeads heads) {
  const int hs = heads.hs;
  if (hs > 128)
    throw std::invalid_argument("GPU attention_decode: head size " + std::to_string(hs) + ", expected at most 128");
  if (B == 0 || Tn == 0) return;
  const size_t n = static_cast<size_t>(B) * Tn * heads.NKV * hs;
  launch.kernel(DecodeAppendKernel{k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, heads},
                LaunchShape{Dim3(grid_for(n, 256)), Dim3(256), 0});
  if (hs <= 32) return launch_decode<32>(launch, out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, heads);
  if (hs <= 64) return launch_decode<64>(launch, out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, heads);
  return launch_decode<128>(launch, out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, heads);
}

}  // namespace eth::kernels::gpu_ops

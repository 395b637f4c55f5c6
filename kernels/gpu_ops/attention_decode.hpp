// Incremental attention for generation (Backend::attention_decode), the GPU twin of
// kernels/cpu/decode_attention.cpp: one kernel appends the new rows' keys and values to the
// caches, a second gives each (sample, head, new query row) one warp that sweeps the cached keys
// in order with an online softmax, in fp32. Each lane owns the head dimensions d = lane + 32 r
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

// k_cache/v_cache[b, h, T0 + i, d] = k/v of qkv_new[b, i] for every (b, i, c = h * hs + d): one
// thread per element of the (B, Tn, C) new keys, grid-stride.
struct DecodeAppendKernel {
  static constexpr const char* kName = "attention_decode_append";
  Global<float> k_cache, v_cache;  // (B, NH, Tmax, hs)
  Global<const float> qkv_new;     // (B, Tn, 3C)
  int B, Tn, T0, Tmax, C, NH;
  SIMT_DEVICE void operator()(Thread& t) const {
    const int hs = C / NH;
    const size_t n = static_cast<size_t>(B) * Tn * C;
    for (size_t e = global_index(t); e < n; e += grid_stride(t)) {
      const int c = static_cast<int>(e % C);
      const size_t bi = e / C;  // b * Tn + i
      const int b = static_cast<int>(bi / Tn), i = static_cast<int>(bi % Tn);
      const size_t at = ((static_cast<size_t>(b) * NH + c / hs) * Tmax + T0 + i) * hs + c % hs;
      k_cache[at] = qkv_new[bi * 3 * C + C + c];
      v_cache[at] = qkv_new[bi * 3 * C + 2 * C + c];
    }
  }
};

// Warp w of block x: row r = x * kDecodeWarps + w of the B * NH * Tn rows, ordered (b, h, i).
template <int H>
struct DecodeKernel {
  static constexpr const char* kName = H == 32 ? "attention_decode<32>" : H == 64 ? "attention_decode<64>"
                                                                                   : "attention_decode<128>";
  Global<float> out;                       // (B, Tn, C)
  Global<const float> k_cache, v_cache;   // (B, NH, Tmax, hs)
  Global<const float> qkv_new;            // (B, Tn, 3C)
  int B, Tn, T0, Tmax, C, NH;
  float scale;
  SIMT_DEVICE void operator()(Thread& t) const {
    constexpr int kPer = H / kWarp;  // dimensions per lane
    const int lane = t.lane();
    const size_t row = static_cast<size_t>(t.block_idx().x) * kDecodeWarps + t.warp();
    if (row >= static_cast<size_t>(B) * NH * Tn) return;  // a whole warp leaves together
    const int hs = C / NH;
    const int i = static_cast<int>(row % Tn);
    const size_t bh = row / Tn;  // b * NH + h
    const int b = static_cast<int>(bh / NH), h = static_cast<int>(bh % NH);
    const Global<const float> q = qkv_new + (static_cast<size_t>(b) * Tn + i) * 3 * C + static_cast<size_t>(h) * hs;
    const Global<const float> k = k_cache + bh * Tmax * hs;  // (Tmax, hs)
    const Global<const float> v = v_cache + bh * Tmax * hs;  // (Tmax, hs)
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
    const Global<float> o = out + (static_cast<size_t>(b) * Tn + i) * C + static_cast<size_t>(h) * hs;
    SIMT_UNROLL
    for (int r = 0; r < kPer; r++) {
      const int d = lane + kWarp * r;
      if (d < hs) o[d] = acc[r] / l;
    }
  }
};

template <int H, class Launch>
void launch_decode(Launch& launch, float* out, const float* k_cache, const float* v_cache, const float* qkv_new,
                   int B, int Tn, int T0, int Tmax, int C, int NH) {
  const size_t rows = static_cast<size_t>(B) * NH * Tn;
  const float scale = 1.f / std::sqrt(static_cast<float>(C / NH));
  launch.kernel(DecodeKernel<H>{out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH, scale},
                LaunchShape{Dim3(static_cast<unsigned>(ceil_div(rows, kDecodeWarps))), Dim3(kDecodeWarps * kWarp), 0});
}

template <class Launch>
void attention_decode(Launch& launch, float* out, float* k_cache, float* v_cache, const float* qkv_new, int B, int Tn,
                      int T0, int Tmax, int C, int NH) {
  const int hs = C / NH;
  if (hs > 128)
    throw std::invalid_argument("GPU attention_decode: head size " + std::to_string(hs) + " (C / NH), expected at most 128");
  if (B == 0 || Tn == 0) return;
  const size_t n = static_cast<size_t>(B) * Tn * C;
  launch.kernel(DecodeAppendKernel{k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH},
                LaunchShape{Dim3(grid_for(n, 256)), Dim3(256), 0});
  if (hs <= 32) return launch_decode<32>(launch, out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH);
  if (hs <= 64) return launch_decode<64>(launch, out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH);
  return launch_decode<128>(launch, out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH);
}

}  // namespace eth::kernels::gpu_ops

// Incremental attention for generation (Backend::attention_decode), the CUDA twin of
// kernels/cpu/decode_attention.cpp: one kernel appends the new rows' keys and values to the
// caches, a second one gives each (sample, head, new query row) one warp that sweeps the cached
// keys in order with an online softmax, in fp32. Each lane owns the head dimensions
// d = lane + 32 r (r < H / 32) of q and of the output accumulator, in registers; a score is
// the warp sum of the lanes' partial dot products, so every lane sees it. Decoding is bound by
// reading the cache once per row: no shared memory, no tensor cores.
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_ops.cuh"

namespace eth::kernels::cuda {
namespace {

constexpr int kDecodeWarps = 4;  // warps (query rows) per block

// k_cache/v_cache[b, h, T0 + i, d] = k/v of qkv_new[b, i] for every (b, i, c = h * hs + d):
// one thread per element of the (B, Tn, C) new keys, grid-stride.
__global__ void append_kernel(float* k_cache, float* v_cache, const float* qkv_new, int B, int Tn, int T0, int Tmax,
                              int C, int NH) {
  const int hs = C / NH;
  const size_t n = static_cast<size_t>(B) * Tn * C;
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(e % C);
    const size_t bi = e / C;  // b * Tn + i
    const int b = static_cast<int>(bi / Tn), i = static_cast<int>(bi % Tn);
    const size_t at = ((static_cast<size_t>(b) * NH + c / hs) * Tmax + T0 + i) * hs + c % hs;
    k_cache[at] = qkv_new[bi * 3 * C + C + c];
    v_cache[at] = qkv_new[bi * 3 * C + 2 * C + c];
  }
}

// Warp w of block x: row r = x * kDecodeWarps + w of the B * NH * Tn rows, ordered (b, h, i).
template <int H>
__global__ void decode_kernel(float* out, const float* k_cache, const float* v_cache, const float* qkv_new, int B,
                              int Tn, int T0, int Tmax, int C, int NH, float scale) {
  constexpr int kPer = H / kWarp;  // dimensions per lane
  const int lane = threadIdx.x % kWarp;
  const size_t row = static_cast<size_t>(blockIdx.x) * kDecodeWarps + threadIdx.x / kWarp;
  if (row >= static_cast<size_t>(B) * NH * Tn) return;  // a whole warp leaves together
  const int hs = C / NH;
  const int i = static_cast<int>(row % Tn);
  const size_t bh = row / Tn;  // b * NH + h
  const int b = static_cast<int>(bh / NH), h = static_cast<int>(bh % NH);
  const float* q = qkv_new + (static_cast<size_t>(b) * Tn + i) * 3 * C + static_cast<size_t>(h) * hs;
  const float* k = k_cache + bh * Tmax * hs;  // (Tmax, hs)
  const float* v = v_cache + bh * Tmax * hs;  // (Tmax, hs)
  float qr[kPer], acc[kPer];
#pragma unroll
  for (int r = 0; r < kPer; r++) {
    const int d = lane + kWarp * r;
    qr[r] = d < hs ? q[d] : 0.f;
    acc[r] = 0.f;
  }
  float m = -INFINITY, l = 0.f;  // running max and sum of exp(score - m)
  for (int j = 0; j <= T0 + i; j++) {
    float partial = 0.f;
#pragma unroll
    for (int r = 0; r < kPer; r++) {
      const int d = lane + kWarp * r;
      if (d < hs) partial += qr[r] * k[static_cast<size_t>(j) * hs + d];
    }
    const float s = warp_sum(partial) * scale;
    const float m_new = fmaxf(m, s);
    const float correction = expf(m - m_new), p = expf(s - m_new);
    l = l * correction + p;
#pragma unroll
    for (int r = 0; r < kPer; r++) {
      const int d = lane + kWarp * r;
      acc[r] = acc[r] * correction + (d < hs ? p * v[static_cast<size_t>(j) * hs + d] : 0.f);
    }
    m = m_new;
  }
  float* o = out + (static_cast<size_t>(b) * Tn + i) * C + static_cast<size_t>(h) * hs;
#pragma unroll
  for (int r = 0; r < kPer; r++) {
    const int d = lane + kWarp * r;
    if (d < hs) o[d] = acc[r] / l;
  }
}

template <int H>
void launch_decode(cudaStream_t stream, float* out, const float* k_cache, const float* v_cache, const float* qkv_new,
                   int B, int Tn, int T0, int Tmax, int C, int NH) {
  const size_t rows = static_cast<size_t>(B) * NH * Tn;
  const float scale = 1.f / sqrtf(static_cast<float>(C / NH));
  decode_kernel<H><<<static_cast<unsigned>(ceil_div(rows, kDecodeWarps)), kDecodeWarps * kWarp, 0, stream>>>(
      out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH, scale);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void attention_decode(cudaStream_t stream, float* out, float* k_cache, float* v_cache, const float* qkv_new, int B,
                      int Tn, int T0, int Tmax, int C, int NH) {
  const int hs = C / NH;
  if (hs > 128)
    throw std::invalid_argument("CUDA attention_decode: head size " + std::to_string(hs) + " (C / NH), expected at most 128");
  append_kernel<<<grid_for(static_cast<size_t>(B) * Tn * C, 256), 256, 0, stream>>>(k_cache, v_cache, qkv_new, B, Tn,
                                                                                    T0, Tmax, C, NH);
  CUDA_CHECK_LAUNCH();
  if (hs <= 32) return launch_decode<32>(stream, out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH);
  if (hs <= 64) return launch_decode<64>(stream, out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH);
  return launch_decode<128>(stream, out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH);
}

}  // namespace eth::kernels::cuda

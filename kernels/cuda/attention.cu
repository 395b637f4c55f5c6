// Causal self-attention that never stores the (T, T) probabilities, the CUDA twin of
// kernels/cpu/flash_attention.cpp with the same lse (B, NH, T) statistics: forward keeps each
// row's log-sum-exp of its scaled scores, backward recomputes the probabilities from q, k and
// lse. fp32 CUDA cores, no tensor cores: one thread per query (or key) row, the other side's
// rows staged through shared memory, where every thread of a block reads the same row at once
// (a broadcast, free of bank conflicts).
//
// Backward runs as two kernels so that no gradient needs an atomic add: one block per key tile
// sums dK and dV over the query rows after it, one block per query tile sums dQ over the keys
// before it; each recomputes the probabilities it needs. D_t = rowsum(dO_t * O_t) is recomputed
// where it is read (a dot of hs per row and tile, small beside the tile's hs x tile work).
//
// Kernels are compiled for a maximum head size H (32, 64, 128) and run any hs <= H: every loop
// over the head runs to H under `d < hs`, fully unrolled, so per-thread rows stay in registers.
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_ops.cuh"

namespace eth::kernels::cuda {
namespace {

// Rows per block: 64 while a key/value tile of 2 x 64 rows of H floats fits 48 KB of shared
// memory with room to spare, 32 for H = 128.
template <int H>
__host__ __device__ constexpr int tile_rows() { return H <= 64 ? 64 : 32; }
// Rows of the other side staged per step in backward: 8 KB of shared memory per pair of tiles.
template <int H>
__host__ __device__ constexpr int sub_rows() { return 1024 / H; }

// Views of one (sample b, head h) of qkv (row stride 3C), out and dout (row stride C), lse.
struct HeadView {
  size_t qkv, out, lse;
  __device__ HeadView(int bh, int T, int C, int NH, int hs)
      : qkv(static_cast<size_t>(bh / NH) * T * 3 * C + static_cast<size_t>(bh % NH) * hs),
        out(static_cast<size_t>(bh / NH) * T * C + static_cast<size_t>(bh % NH) * hs),
        lse(static_cast<size_t>(bh) * T) {}
};

// dst[r][d] = src[(row0 + r) * stride + d] for r < rows, d < hs, and 0 beyond: a tile of `rows`
// rows (of tile_rows capacity) read with consecutive threads on consecutive floats.
template <int H, int Pitch>
__device__ void load_rows(float (*dst)[Pitch], const float* src, size_t stride, int row0, int rows, int count,
                          int hs) {
  for (int e = threadIdx.x; e < count * H; e += blockDim.x) {
    const int r = e / H, d = e % H;
    dst[r][d] = (r < rows && d < hs) ? src[static_cast<size_t>(row0 + r) * stride + d] : 0.f;
  }
}

template <int H>
__global__ void forward_kernel(float* out, float* lse, const float* qkv, int T, int C, int NH, int hs, float scale) {
  constexpr int kRows = tile_rows<H>();
  __shared__ float k_tile[kRows][H], v_tile[kRows][H];
  const HeadView at(blockIdx.y, T, C, NH, hs);
  const size_t C3 = 3 * static_cast<size_t>(C);
  const int i0 = blockIdx.x * kRows, t = i0 + threadIdx.x;
  const bool active = t < T;
  float q[H], acc[H];
#pragma unroll
  for (int d = 0; d < H; d++) {
    q[d] = (active && d < hs) ? qkv[at.qkv + t * C3 + d] * scale : 0.f;
    acc[d] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  const int last = min(i0 + kRows, T);  // keys [0, last) are visible to some row of this block
  for (int j0 = 0; j0 < last; j0 += kRows) {
    const int cols = min(kRows, last - j0);
    __syncthreads();  // the previous tile is no longer read
    load_rows<H>(k_tile, qkv + at.qkv + C, C3, j0, cols, kRows, hs);
    load_rows<H>(v_tile, qkv + at.qkv + 2 * C, C3, j0, cols, kRows, hs);
    __syncthreads();
    const int visible = active ? min(cols, t - j0 + 1) : 0;
    for (int c = 0; c < visible; c++) {
      float s = 0.f;
#pragma unroll
      for (int d = 0; d < H; d++) s += q[d] * k_tile[c][d];
      if (s > m) {  // a new row max: rescale what is summed so far (exp(-inf) = 0 at first)
        const float correction = expf(m - s);
        l *= correction;
#pragma unroll
        for (int d = 0; d < H; d++) acc[d] *= correction;
        m = s;
      }
      const float p = expf(s - m);
      l += p;
#pragma unroll
      for (int d = 0; d < H; d++) acc[d] += p * v_tile[c][d];
    }
  }
  if (!active) return;
  const float inv = 1.f / l;
#pragma unroll
  for (int d = 0; d < H; d++)
    if (d < hs) out[at.out + static_cast<size_t>(t) * C + d] = acc[d] * inv;
  lse[at.lse + t] = m + logf(l);
}

// One block per key tile: thread c owns key j0 + c, sums its dK and dV over every query row
// t >= its key, query rows staged sub_rows at a time.
template <int H>
__global__ void backward_dkdv_kernel(float* dqkv, const float* dout, const float* qkv, const float* out,
                                     const float* lse, int T, int C, int NH, int hs, float scale) {
  constexpr int kRows = tile_rows<H>(), kSub = sub_rows<H>();
  __shared__ float k_own[kRows][H + 1], v_own[kRows][H + 1];  // each thread reads its own row: pad
  __shared__ float q_sub[kSub][H], do_sub[kSub][H], lse_sub[kSub], D_sub[kSub];
  const HeadView at(blockIdx.y, T, C, NH, hs);
  const size_t C3 = 3 * static_cast<size_t>(C);
  const int j0 = blockIdx.x * kRows, key = j0 + threadIdx.x, cols = min(kRows, T - j0);
  load_rows<H>(k_own, qkv + at.qkv + C, C3, j0, cols, kRows, hs);
  load_rows<H>(v_own, qkv + at.qkv + 2 * C, C3, j0, cols, kRows, hs);
  float dk[H], dv[H];
#pragma unroll
  for (int d = 0; d < H; d++) dk[d] = dv[d] = 0.f;
  for (int r0 = j0; r0 < T; r0 += kSub) {  // query rows before j0 see none of these keys
    const int rows = min(kSub, T - r0);
    __syncthreads();
    load_rows<H>(q_sub, qkv + at.qkv, C3, r0, rows, kSub, hs);
    load_rows<H>(do_sub, dout + at.out, C, r0, rows, kSub, hs);
    if (threadIdx.x < rows) {
      const size_t row = at.out + static_cast<size_t>(r0 + threadIdx.x) * C;
      float D = 0.f;
      for (int d = 0; d < hs; d++) D += dout[row + d] * out[row + d];
      D_sub[threadIdx.x] = D;
      lse_sub[threadIdx.x] = lse[at.lse + r0 + threadIdx.x];
    }
    __syncthreads();
    if (threadIdx.x >= cols) continue;
    for (int r = max(0, key - r0); r < rows; r++) {  // query r0 + r >= key
      float s = 0.f, dp = 0.f;
#pragma unroll
      for (int d = 0; d < H; d++) {
        s += q_sub[r][d] * k_own[threadIdx.x][d];
        dp += do_sub[r][d] * v_own[threadIdx.x][d];
      }
      const float p = expf(s * scale - lse_sub[r]);
      const float ds = p * (dp - D_sub[r]) * scale;
#pragma unroll
      for (int d = 0; d < H; d++) {
        dv[d] += p * do_sub[r][d];
        dk[d] += ds * q_sub[r][d];
      }
    }
  }
  if (threadIdx.x >= cols) return;
  float* row = dqkv + at.qkv + static_cast<size_t>(key) * C3;
#pragma unroll
  for (int d = 0; d < H; d++) {
    if (d < hs) {
      row[C + d] = dk[d];
      row[2 * C + d] = dv[d];
    }
  }
}

// One block per query tile: thread r owns query i0 + r, sums its dQ over keys <= it, key rows
// staged sub_rows at a time.
template <int H>
__global__ void backward_dq_kernel(float* dqkv, const float* dout, const float* qkv, const float* out,
                                   const float* lse, int T, int C, int NH, int hs, float scale) {
  constexpr int kRows = tile_rows<H>(), kSub = sub_rows<H>();
  __shared__ float do_own[kRows][H + 1];
  __shared__ float k_sub[kSub][H], v_sub[kSub][H];
  const HeadView at(blockIdx.y, T, C, NH, hs);
  const size_t C3 = 3 * static_cast<size_t>(C);
  const int i0 = blockIdx.x * kRows, t = i0 + threadIdx.x, rows = min(kRows, T - i0);
  const bool active = t < T;
  load_rows<H>(do_own, dout + at.out, C, i0, rows, kRows, hs);
  float q[H], dq[H];
  float D = 0.f;
#pragma unroll
  for (int d = 0; d < H; d++) {
    q[d] = (active && d < hs) ? qkv[at.qkv + t * C3 + d] : 0.f;
    if (active && d < hs) D += dout[at.out + static_cast<size_t>(t) * C + d] * out[at.out + static_cast<size_t>(t) * C + d];
    dq[d] = 0.f;
  }
  const float L = active ? lse[at.lse + t] : 0.f;
  const int last = i0 + rows;  // keys [0, last)
  for (int c0 = 0; c0 < last; c0 += kSub) {
    const int cols = min(kSub, last - c0);
    __syncthreads();  // also orders do_own's load before its first read
    load_rows<H>(k_sub, qkv + at.qkv + C, C3, c0, cols, kSub, hs);
    load_rows<H>(v_sub, qkv + at.qkv + 2 * C, C3, c0, cols, kSub, hs);
    __syncthreads();
    const int visible = active ? min(cols, t - c0 + 1) : 0;
    for (int c = 0; c < visible; c++) {
      float s = 0.f, dp = 0.f;
#pragma unroll
      for (int d = 0; d < H; d++) {
        s += q[d] * k_sub[c][d];
        dp += do_own[threadIdx.x][d] * v_sub[c][d];
      }
      const float ds = expf(s * scale - L) * (dp - D) * scale;
#pragma unroll
      for (int d = 0; d < H; d++) dq[d] += ds * k_sub[c][d];
    }
  }
  if (!active) return;
#pragma unroll
  for (int d = 0; d < H; d++)
    if (d < hs) dqkv[at.qkv + t * C3 + d] = dq[d];
}

// The kernel family for hs: the smallest compiled maximum head size that holds it.
int max_head_size(int hs) {
  for (int H : {32, 64, 128})
    if (hs <= H) return H;
  throw std::invalid_argument("CUDA attention: head size " + std::to_string(hs) +
                              " (channels / heads) is above the 128 its kernels are compiled for");
}

template <int H>
void launch_forward(cudaStream_t stream, float* out, float* lse, const float* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const dim3 grid(static_cast<unsigned>(ceil_div(T, tile_rows<H>())), static_cast<unsigned>(B * NH));
  forward_kernel<H><<<grid, tile_rows<H>(), 0, stream>>>(out, lse, qkv, T, C, NH, hs, 1.f / sqrtf(float(hs)));
  CUDA_CHECK_LAUNCH();
}

template <int H>
void launch_backward(cudaStream_t stream, float* dqkv, const float* dout, const float* qkv, const float* out,
                     const float* lse, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const float scale = 1.f / sqrtf(float(hs));
  const dim3 grid(static_cast<unsigned>(ceil_div(T, tile_rows<H>())), static_cast<unsigned>(B * NH));
  backward_dkdv_kernel<H><<<grid, tile_rows<H>(), 0, stream>>>(dqkv, dout, qkv, out, lse, T, C, NH, hs, scale);
  CUDA_CHECK_LAUNCH();
  backward_dq_kernel<H><<<grid, tile_rows<H>(), 0, stream>>>(dqkv, dout, qkv, out, lse, T, C, NH, hs, scale);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void attention_forward(cudaStream_t stream, float* out, float* lse, const float* qkv, int B, int T, int C, int NH) {
  if (B == 0 || T == 0) return;
  switch (max_head_size(C / NH)) {
    case 32: return launch_forward<32>(stream, out, lse, qkv, B, T, C, NH);
    case 64: return launch_forward<64>(stream, out, lse, qkv, B, T, C, NH);
    default: return launch_forward<128>(stream, out, lse, qkv, B, T, C, NH);
  }
}

void attention_backward(cudaStream_t stream, float* dqkv, const float* dout, const float* qkv, const float* out,
                        const float* lse, int B, int T, int C, int NH) {
  if (B == 0 || T == 0) return;
  switch (max_head_size(C / NH)) {
    case 32: return launch_backward<32>(stream, dqkv, dout, qkv, out, lse, B, T, C, NH);
    case 64: return launch_backward<64>(stream, dqkv, dout, qkv, out, lse, B, T, C, NH);
    default: return launch_backward<128>(stream, dqkv, dout, qkv, out, lse, B, T, C, NH);
  }
}

}  // namespace eth::kernels::cuda

// Causal self-attention that never stores the (T, T) probabilities, the GPU twin of
// kernels/cpu/flash_attention.cpp with the same lse (B, NH, T) statistics: forward keeps each
// row's log-sum-exp of its scaled scores, backward recomputes the probabilities from q, k and
// lse. fp32 CUDA cores, no tensor cores, no atomics: every output element is written once, by
// one thread, after sums in a fixed order, so results are bitwise reproducible.
//
// Work split: each query (or key) row belongs to a group of G = H / 32 adjacent threads of one
// warp, and thread g of the group owns the 32 head dims d = g + G i (i < 32) of the row's q and
// output accumulators (acc; dk and dv; dq). Interleaved rather than contiguous, so that the G
// threads of a group read G consecutive floats of a row of the other side that the whole block
// reads at once: distinct banks, the rest a broadcast. A dot product over the head is each
// thread's partial sum over its dims, combined by a butterfly of shfl_xor inside the group
// (group_sum). At most 2 x 32 accumulators per thread plus the cached row: no kernel spills at
// H = 64 or 128, where one thread per row held 2 x H and spilled.
//
// Backward runs as two kernels so that no gradient needs an atomic add: one block per key tile
// of a K/V head sums dK and dV over the query rows after it, of each query head of its group in
// turn (grouped-query attention: kernels/attention_heads.hpp), one block per query tile sums dQ
// over the keys before it; each recomputes the probabilities it needs. D_t = rowsum(dO_t * O_t) is recomputed
// where it is read (a dot of hs per row and tile, small beside the tile's hs x tile work), by the
// same function in both kernels, so both see the same bits.
//
// Kernels are compiled for a maximum head size H (32, 64, 128) and run any hs <= H: every loop
// over a thread's dims runs to 32 under `d < hs`, fully unrolled, so its per-thread rows stay in
// registers; rows of shared memory are zero past hs.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {
namespace attn {

constexpr int kDims = 32;  // head dims per thread, in every family: H / G

// The numbers of one head-size family, in one place.
template <int H>
struct Tile {
  static_assert(H == 32 || H == 64 || H == 128);
  static constexpr int kGroup = H / kDims;  // threads per row (G)
  // Rows per block: 64 while a key/value tile of 2 x 64 rows of H floats fits 48 KB of shared
  // memory with room to spare, 32 for H = 128.
  static constexpr int kRows = H <= 64 ? 64 : 32;
  static constexpr int kThreads = kRows * kGroup;  // 64 (H = 32), 128 (H = 64, 128)
  // Rows of the other side staged per step in backward: 8 KB of shared memory per pair of tiles.
  static constexpr int kSub = 1024 / H;
  // Pitch of a tile whose rows are each read by their own group (backward's k_own, v_own,
  // do_own): thread (row, g) reads word row (H + G) + g + G i, in bank (G row + g + G i) mod 32
  // (H is a multiple of 32), and a warp's 32 / G rows times G threads fill all 32 banks.
  static constexpr int kOwnPitch = H + kGroup;
};

// A kernel's name in its family, kName: the interpreter counts each head size apart.
template <int H>
constexpr const char* by_head_size(const char* h32, const char* h64, const char* h128) {
  return H == 32 ? h32 : H == 64 ? h64 : h128;
}

// The lanes of this lane's group: G adjacent lanes starting at a multiple of G.
template <int G>
SIMT_DEVICE unsigned group_mask(int lane) {
  if constexpr (G == 1) return 1u << lane;
  else return ((1u << G) - 1u) << (lane & ~(G - 1));
}

// The sum over the group of each thread's partial v, in every thread of the group. A butterfly
// over xor: at each step a lane adds its partner's value to its own, and a + b == b + a in IEEE
// arithmetic, so both partners hold the same bits; after log2 G steps every lane of the group
// holds bitwise the same sum. Hence the online-softmax state (m, l) and every probability that
// the G threads of a row compute from such sums are identical across the group, and each
// thread's slice of acc (dk, dv, dq) is scaled exactly as the others'.
template <int G>
SIMT_DEVICE float group_sum(Thread& t, unsigned mask, float v) {
  SIMT_UNROLL
  for (int offset = 1; offset < G; offset *= 2) v += t.shfl_xor(mask, v, offset);
  return v;
}

// Offsets of one (sample b, query head h) at its sample's first row: in qkv (row stride
// heads.qkv_row()) of its query, and of its K/V head's key and value; in out and dout (row
// stride heads.out_row()); in lse (B, NH, T).
struct HeadView {
  size_t q, k, v, out, lse;
  SIMT_HOST_DEVICE HeadView(int b, int h, int T, AttentionHeads heads)
      : q(static_cast<size_t>(b) * T * heads.qkv_row() + heads.q(h)),
        k(static_cast<size_t>(b) * T * heads.qkv_row() + heads.k(heads.kv_head(h))),
        v(static_cast<size_t>(b) * T * heads.qkv_row() + heads.v(heads.kv_head(h))),
        out(static_cast<size_t>(b) * T * heads.out_row() + heads.q(h)),
        lse((static_cast<size_t>(b) * heads.NH + h) * T) {}
  // Of query head bh % NH of sample bh / NH: a block (x, bh) of a grid over B NH.
  static SIMT_HOST_DEVICE HeadView of(int bh, int T, AttentionHeads heads) {
    return HeadView(bh / heads.NH, bh % heads.NH, T, heads);
  }
};

// A thread's place (row, g) among its block's groups of G threads, thread tid = G row + g.
template <int G>
struct RowThread {
  int row, g;
  unsigned mask;  // its group's lanes
  SIMT_DEVICE explicit RowThread(Thread& t)
      : row(static_cast<int>(t.thread_idx().x) / G),
        g(static_cast<int>(t.thread_idx().x) % G),
        mask(group_mask<G>(t.lane())) {}
};

// What both backward kernels read, and dqkv (B, T, (NH + 2 NKV) hs), of which each writes its
// parts: dq, or dk and dv.
struct BackwardArgs {
  Global<float> dqkv;        // (B, T, (NH + 2 NKV) hs)
  Global<const float> dout;  // (B, T, NH hs)
  Global<const float> qkv;   // (B, T, (NH + 2 NKV) hs)
  Global<const float> out;   // (B, T, NH hs)
  Global<const float> lse;   // (B, NH, T)
  int T;
  AttentionHeads heads;
  float scale;               // 1 / sqrt(hs)
};

// dst(r, d) = src[(row0 + r) * stride + d] for r < rows, d < hs, and 0 for rows <= r < count or
// hs <= d < H: a tile read by the whole block, consecutive threads on consecutive floats.
template <int H, class Tile2D>
SIMT_DEVICE void load_rows(Thread& t, Tile2D& dst, Global<const float> src, size_t stride, int row0, int rows,
                           int count, int hs) {
  for (int e = static_cast<int>(t.thread_idx().x); e < count * H; e += static_cast<int>(t.block_dim().x)) {
    const int r = e / H, d = e % H;
    dst(r, d) = (r < rows && d < hs) ? static_cast<float>(src[static_cast<size_t>(row0 + r) * stride + d]) : 0.f;
  }
}

// rowsum(dO * O) of the row at `row` (out and dout layout), summed over the group: thread g adds
// its dims in order, then group_sum. The same bits wherever it is called.
template <int G>
SIMT_DEVICE float row_delta(Thread& t, unsigned mask, Global<const float> dout, Global<const float> out, size_t row,
                            int g, int hs) {
  float D = 0.f;
  SIMT_UNROLL
  for (int i = 0; i < kDims; i++) {
    const int d = g + G * i;
    if (d < hs) D += dout[row + d] * out[row + d];
  }
  return group_sum<G>(t, mask, D);
}

// Grid (ceil(T / kRows), B NH), block kThreads: block (x, bh) owns query rows
// [x kRows, x kRows + kRows) of query head bh (sample bh / NH); thread (row = tid / G, g = tid % G) owns query row
// x kRows + row, dims g + G i of its q (pre-scaled) and acc. Key/value tiles of kRows rows up to
// the block's last query are staged through shared memory, read by every thread at once.
template <int H>
struct ForwardKernel {
  using Tl = Tile<H>;
  static constexpr int G = Tl::kGroup, kRows = Tl::kRows;
  static constexpr const char* kName = by_head_size<H>("attention_forward<32>", "attention_forward<64>",
                                                       "attention_forward<128>");
  struct Smem {
    simt::SharedArray2D<float, kRows, H> k, v;  // keys [j0, j0 + kRows) of the head
  };
  Global<float> out;        // (B, T, NH hs)
  Global<float> lse;        // (B, NH, T)
  Global<const float> qkv;  // (B, T, (NH + 2 NKV) hs)
  int T;
  AttentionHeads heads;
  float scale;              // 1 / sqrt(hs)

  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const auto [row, g, mask] = RowThread<G>(t);
    const HeadView at = HeadView::of(static_cast<int>(t.block_idx().y), T, heads);
    const size_t qkv_row = heads.qkv_row(), out_row = heads.out_row();
    const int hs = heads.hs;
    const int i0 = static_cast<int>(t.block_idx().x) * kRows, query = i0 + row;
    const bool active = query < T;
    float q[kDims], acc[kDims];
    SIMT_UNROLL
    for (int i = 0; i < kDims; i++) {
      const int d = g + G * i;
      q[i] = (active && d < hs) ? qkv[at.q + query * qkv_row + d] * scale : 0.f;
      acc[i] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    const int last = simt::imin(i0 + kRows, T);  // keys [0, last) are visible to some row of this block
    for (int j0 = 0; j0 < last; j0 += kRows) {
      const int cols = simt::imin(kRows, last - j0);
      t.sync();  // the previous tile is no longer read
      load_rows<H>(t, s.k, qkv + at.k, qkv_row, j0, cols, kRows, hs);
      load_rows<H>(t, s.v, qkv + at.v, qkv_row, j0, cols, kRows, hs);
      t.sync();
      const int visible = active ? simt::imin(cols, query - j0 + 1) : 0;  // the same in the whole group
      for (int c = 0; c < visible; c++) {
        float part = 0.f;
        SIMT_UNROLL
        for (int i = 0; i < kDims; i++) part += q[i] * s.k(c, g + G * i);
        const float sc = group_sum<G>(t, mask, part);
        if (sc > m) {  // a new row max: rescale what is summed so far (exp(-inf) = 0 at first)
          const float correction = simt::expf_(m - sc);
          l *= correction;
          SIMT_UNROLL
          for (int i = 0; i < kDims; i++) acc[i] *= correction;
          m = sc;
        }
        const float p = simt::expf_(sc - m);
        l += p;
        SIMT_UNROLL
        for (int i = 0; i < kDims; i++) acc[i] += p * s.v(c, g + G * i);
      }
    }
    if (!active) return;
    const float inv = 1.f / l;
    SIMT_UNROLL
    for (int i = 0; i < kDims; i++) {
      const int d = g + G * i;
      if (d < hs) out[at.out + query * out_row + d] = acc[i] * inv;
    }
    if (g == 0) lse[at.lse + query] = m + simt::logf_(l);
  }
};

// Grid (ceil(T / kRows), B NKV), block kThreads: block (x, bg) owns key rows
// [j0, j0 + kRows), j0 = x kRows, of K/V head bg % NKV of sample bg / NKV; thread
// (row = tid / G, g) owns key j0 + row and dims g + G i of its dK and dV, summed over every query
// t >= its key of each query head of the group in turn (NH / NKV of them, in order: the bits do
// not depend on the launch). The block's k and v rows sit in shared memory (each group reads its
// own row); query rows, their dO, lse and D are staged kSub at a time.
template <int H>
struct BackwardDkdvKernel : BackwardArgs {  // writes the dk and dv thirds of dqkv
  using Tl = Tile<H>;
  static constexpr int G = Tl::kGroup, kRows = Tl::kRows, kSub = Tl::kSub;
  static constexpr const char* kName = by_head_size<H>("attention_backward_dkdv<32>", "attention_backward_dkdv<64>",
                                                       "attention_backward_dkdv<128>");
  struct Smem {
    simt::SharedArray2D<float, kRows, Tl::kOwnPitch> k_own, v_own;  // keys [j0, j0 + kRows)
    simt::SharedArray2D<float, kSub, H> q, dout;                     // queries [r0, r0 + kSub)
    simt::SharedArray<float, kSub> lse, D;
  };
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const auto [row, g, mask] = RowThread<G>(t);
    const int bg = static_cast<int>(t.block_idx().y), b = bg / heads.NKV, h0 = bg % heads.NKV * heads.group();
    const HeadView kv(b, h0, T, heads);  // the K/V head's offsets (those of its group's first query head)
    const size_t qkv_row = heads.qkv_row(), out_row = heads.out_row();
    const int hs = heads.hs;
    const int j0 = static_cast<int>(t.block_idx().x) * kRows, key = j0 + row, cols = simt::imin(kRows, T - j0);
    load_rows<H>(t, s.k_own, qkv + kv.k, qkv_row, j0, cols, kRows, hs);
    load_rows<H>(t, s.v_own, qkv + kv.v, qkv_row, j0, cols, kRows, hs);
    float dk[kDims], dv[kDims];
    SIMT_UNROLL
    for (int i = 0; i < kDims; i++) dk[i] = dv[i] = 0.f;
    for (int h = h0; h < h0 + heads.group(); h++) {
      const HeadView at(b, h, T, heads);
      for (int r0 = j0; r0 < T; r0 += kSub) {  // query rows before j0 see none of these keys
        const int rows = simt::imin(kSub, T - r0);
        t.sync();  // the previous rows are no longer read; also orders k_own's load before its reads
        load_rows<H>(t, s.q, qkv + at.q, qkv_row, r0, rows, kSub, hs);
        load_rows<H>(t, s.dout, dout + at.out, out_row, r0, rows, kSub, hs);
        if (row < rows) {  // the first `rows` groups: D and lse of query r0 + row
          const float D = row_delta<G>(t, mask, dout, out, at.out + (r0 + row) * out_row, g, hs);
          if (g == 0) {
            s.D(row) = D;
            s.lse(row) = lse[at.lse + r0 + row];
          }
        }
        t.sync();
        if (row >= cols) continue;
        for (int r = simt::imax(0, key - r0); r < rows; r++) {  // query r0 + r >= key
          float s_part = 0.f, dp_part = 0.f;
          SIMT_UNROLL
          for (int i = 0; i < kDims; i++) {
            const int d = g + G * i;
            s_part += s.q(r, d) * s.k_own(row, d);
            dp_part += s.dout(r, d) * s.v_own(row, d);
          }
          const float sc = group_sum<G>(t, mask, s_part), dp = group_sum<G>(t, mask, dp_part);
          const float p = simt::expf_(sc * scale - s.lse(r));
          const float ds = p * (dp - s.D(r)) * scale;
          SIMT_UNROLL
          for (int i = 0; i < kDims; i++) {
            const int d = g + G * i;
            dv[i] += p * s.dout(r, d);
            dk[i] += ds * s.q(r, d);
          }
        }
      }
    }
    if (row >= cols) return;
    const size_t at_key = static_cast<size_t>(key) * qkv_row;
    SIMT_UNROLL
    for (int i = 0; i < kDims; i++) {
      const int d = g + G * i;
      if (d < hs) {
        dqkv[kv.k + at_key + d] = dk[i];
        dqkv[kv.v + at_key + d] = dv[i];
      }
    }
  }
};

// Grid (ceil(T / kRows), B NH), block kThreads: block (x, bh) owns query rows
// [i0, i0 + kRows), i0 = x kRows, of query head bh (sample bh / NH); thread (row = tid / G, g) owns query i0 + row and
// dims g + G i of its q and dQ, summed over keys <= it. The block's dO rows sit in shared memory
// (each group reads its own row); key and value rows are staged kSub at a time.
template <int H>
struct BackwardDqKernel : BackwardArgs {  // writes the dq third of dqkv
  using Tl = Tile<H>;
  static constexpr int G = Tl::kGroup, kRows = Tl::kRows, kSub = Tl::kSub;
  static constexpr const char* kName = by_head_size<H>("attention_backward_dq<32>", "attention_backward_dq<64>",
                                                       "attention_backward_dq<128>");
  struct Smem {
    simt::SharedArray2D<float, kRows, Tl::kOwnPitch> do_own;  // queries [i0, i0 + kRows)
    simt::SharedArray2D<float, kSub, H> k, v;                  // keys [c0, c0 + kSub)
  };
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const auto [row, g, mask] = RowThread<G>(t);
    const HeadView at = HeadView::of(static_cast<int>(t.block_idx().y), T, heads);
    const size_t qkv_row = heads.qkv_row(), out_row = heads.out_row();
    const int hs = heads.hs;
    const int i0 = static_cast<int>(t.block_idx().x) * kRows, query = i0 + row, rows = simt::imin(kRows, T - i0);
    const bool active = query < T;
    load_rows<H>(t, s.do_own, dout + at.out, out_row, i0, rows, kRows, hs);
    float q[kDims], dq[kDims];
    SIMT_UNROLL
    for (int i = 0; i < kDims; i++) {
      const int d = g + G * i;
      q[i] = (active && d < hs) ? static_cast<float>(qkv[at.q + query * qkv_row + d]) : 0.f;
      dq[i] = 0.f;
    }
    const float D = active ? row_delta<G>(t, mask, dout, out, at.out + query * out_row, g, hs) : 0.f;
    const float L = active ? static_cast<float>(lse[at.lse + query]) : 0.f;
    const int last = i0 + rows;  // keys [0, last)
    for (int c0 = 0; c0 < last; c0 += kSub) {
      const int cols = simt::imin(kSub, last - c0);
      t.sync();  // the previous rows are no longer read; also orders do_own's load before its reads
      load_rows<H>(t, s.k, qkv + at.k, qkv_row, c0, cols, kSub, hs);
      load_rows<H>(t, s.v, qkv + at.v, qkv_row, c0, cols, kSub, hs);
      t.sync();
      const int visible = active ? simt::imin(cols, query - c0 + 1) : 0;  // the same in the whole group
      for (int c = 0; c < visible; c++) {
        float s_part = 0.f, dp_part = 0.f;
        SIMT_UNROLL
        for (int i = 0; i < kDims; i++) {
          const int d = g + G * i;
          s_part += q[i] * s.k(c, d);
          dp_part += s.do_own(row, d) * s.v(c, d);
        }
        const float sc = group_sum<G>(t, mask, s_part), dp = group_sum<G>(t, mask, dp_part);
        const float ds = simt::expf_(sc * scale - L) * (dp - D) * scale;
        SIMT_UNROLL
        for (int i = 0; i < kDims; i++) dq[i] += ds * s.k(c, g + G * i);
      }
    }
    if (!active) return;
    SIMT_UNROLL
    for (int i = 0; i < kDims; i++) {
      const int d = g + G * i;
      if (d < hs) dqkv[at.q + query * qkv_row + d] = dq[i];
    }
  }
};

// The kernel family for hs: the smallest compiled maximum head size that holds it.
inline int max_head_size(int hs) {
  for (int H : {32, 64, 128})
    if (hs <= H) return H;
  throw std::invalid_argument("GPU attention: head size " + std::to_string(hs) +
                              " is above the 128 its kernels are compiled for");
}

// Every kernel of the family on the same grid: one block per tile of kRows rows and head (query
// heads, or K/V heads for dK and dV: `heads` of them per sample).
template <int H, class Kernel>
LaunchShape shape_of(int B, int T, int heads) {
  return {Dim3(static_cast<unsigned>(ceil_div(static_cast<size_t>(T), Tile<H>::kRows)),
               static_cast<unsigned>(B * heads)),
          Dim3(Tile<H>::kThreads), sizeof(typename Kernel::Smem)};
}

template <int H, class Launch>
void forward(Launch& launch, float* out, float* lse, const float* qkv, int B, int T, AttentionHeads heads) {
  const float scale = 1.f / std::sqrt(static_cast<float>(heads.hs));
  launch.kernel(ForwardKernel<H>{out, lse, qkv, T, heads, scale}, shape_of<H, ForwardKernel<H>>(B, T, heads.NH));
}

template <int H, class Launch>
void backward(Launch& launch, float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
              int B, int T, AttentionHeads heads) {
  const BackwardArgs args{dqkv, dout, qkv, out, lse, T, heads, 1.f / std::sqrt(static_cast<float>(heads.hs))};
  launch.kernel(BackwardDkdvKernel<H>{args}, shape_of<H, BackwardDkdvKernel<H>>(B, T, heads.NKV));
  launch.kernel(BackwardDqKernel<H>{args}, shape_of<H, BackwardDqKernel<H>>(B, T, heads.NH));
}

}  // namespace attn

// out (B, T, NH hs), lse (B, NH, T) from qkv (B, T, (NH + 2 NKV) hs).
template <class Launch>
void attention_forward(Launch& launch, float* out, float* lse, const float* qkv, int B, int T, AttentionHeads heads) {
  if (B == 0 || T == 0) return;
  switch (attn::max_head_size(heads.hs)) {
    case 32: return attn::forward<32>(launch, out, lse, qkv, B, T, heads);
    case 64: return attn::forward<64>(launch, out, lse, qkv, B, T, heads);
    default: return attn::forward<128>(launch, out, lse, qkv, B, T, heads);
  }
}

// dqkv (B, T, (NH + 2 NKV) hs), overwritten, from dout (B, T, NH hs) and forward's qkv, out and
// lse.
template <class Launch>
void attention_backward(Launch& launch, float* dqkv, const float* dout, const float* qkv, const float* out,
                        const float* lse, int B, int T, AttentionHeads heads) {
  if (B == 0 || T == 0) return;
  switch (attn::max_head_size(heads.hs)) {
    case 32: return attn::backward<32>(launch, dqkv, dout, qkv, out, lse, B, T, heads);
    case 64: return attn::backward<64>(launch, dqkv, dout, qkv, out, lse, B, T, heads);
    default: return attn::backward<128>(launch, dqkv, dout, qkv, out, lse, B, T, heads);
  }
}

}  // namespace eth::kernels::gpu_ops

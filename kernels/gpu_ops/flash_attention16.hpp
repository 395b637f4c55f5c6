// Causal self-attention in 16 bits on the tensor cores: FlashAttention-2's scheme in the kernel
// dialect, the ops of kernels/gpu_ops/attention.hpp with storage in E = bf16 or fp16 (qkv, out,
// dout, dqkv) and the same fp32 lse (B, NH, T). The only 16-bit arithmetic is the operands of
// mma.sync m16n8k16 in E (fp32 accumulation; compute capability 8.0 and later): Q, K, V and dO as
// stored, and the probabilities P and their gradients dS, rounded to E from the fp32 accumulators
// they are computed in. Softmax statistics, D and every accumulator stay fp32; each output is
// rounded to E once, when it is stored. The two types differ in these roundings alone: fp16
// keeps 11 significant bits to bf16's 8, over a range whose values below 2^-24 round to zero.
//
// Work split (Tile<H>): a block of 8 warps owns 128 rows of one (sample, head), each warp 16 of
// them, which is the M of its mma tiles; the other side's rows are staged through shared memory
// by cp.async, double-buffered, the next tile's copy in flight while the current one is
// multiplied (the forward stages K and V in separate groups, so that V's copy also overlaps
// S = Q K^T). Fragments: the warp's own 16 rows as A operands (ldmatrix), the staged rows as B
// operands (ldmatrix for B^T = rows of K, Q or dO; ldmatrix.trans for B = rows of V, K, Q or dO),
// and P or dS turned into A operands straight from the accumulators' registers (to_a), since the
// C layout of two adjacent n-tiles is the A layout of one k-step. A warp skips the products of a
// tile that none of its rows sees (past the diagonal, or rows past T) and masks only the tiles the
// diagonal crosses. Softmax runs in base 2 with the scale folded in: exp2(S scale log2 e - m).
// Outputs are staged through shared memory (the warp's own rows of a tile it no longer reads)
// and stored 16 bytes a thread.
//
//   forward   block per (128 queries, head): S = Q K^T, online softmax on the accumulator
//             layout (each thread holds two rows, a quad of lanes shares them), O += P V; lse kept
//   delta     D = rowsum(dO * O) per query, fp32, into scratch
//   dkdv      block per (128 keys, K/V head), looping over the query heads of its group in
//             order and, for each, over the query tiles at and after it (their Q, dO, lse and D
//             by cp.async): P^T = exp(scale K Q^T - lse), dP^T = V dO^T,
//             dS^T = P^T (dP^T - D), dV += P^T dO, dK += scale dS^T Q
//   dq        block per (128 queries, query head), looping over the key tiles up to it of its
//             K/V head: dQ += scale dS K
//
// Heads as kernels/attention_heads.hpp lays them out (grouped-query attention: query head h
// reads K/V head h / (NH / NKV)); a qkv row holds (NH + 2 NKV) hs values, an out row NH hs.
//
// No atomics: every output element is summed by one thread over its tiles in order, so a rerun
// gives the same bits. Rows past T are zero in shared memory (so that no NaN enters a product)
// and masked out of P; nothing past T is stored.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/gpu_ops/attention.hpp"  // attn::HeadView
#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {
namespace flash {

// The numbers of one head size, in one place.
template <int H>
struct Tile {
  static_assert(H == 64 || H == 128);
  static constexpr int kWarps = 8, kThreads = kWarps * kWarp;
  static constexpr int kRows = kWarps * simt::kMmaM;  // 128: the rows a block owns
  static constexpr int kCols = 64;                    // forward: keys per staged tile
  // Backward: rows of the other side per staged tile. 32 at H = 128, where dK and dV (or dQ and
  // the Q and dO fragments) already take 128 registers a thread, so that S and dP add 32, not 64.
  static constexpr int kStep = H == 64 ? 64 : 32;
  // 16-bit values per shared row: 16 bytes of padding put the 8 rows an ldmatrix reads in 8
  // distinct 16-byte bank groups ((H + 8) * 2 bytes is 16 mod 128), so it runs conflict-free.
  // Shared memory: forward 54 KiB (H = 64) and 102 KiB (H = 128), backward at most 102 KiB,
  // within sm_80's 163 KiB.
  static constexpr int kPitch = H + 8;
  // Blocks an SM must hold at once (__launch_bounds__ with kThreads): one. Two would cap a thread
  // at 128 registers, and ptxas then spills at H = 64 (dK/dV 400 bytes, dQ 72 at sm_80; the
  // forward 8 at sm_90: scripts/check_spills.py); at H = 128 the accumulators take 200 and more.
  static constexpr int kMinBlocksPerSm = 1;
};

// log2(e) and ln(2): the softmax runs in base 2, lse is kept in base e.
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

template <class E, int Rows, int H>
using SmemTile = simt::SharedArray2D<E, Rows, Tile<H>::kPitch>;

// dst(r, d) = src[(row0 + r) stride + d], rows r < Rows, d < H, by cp.async in 16-byte pieces;
// rows at or past T are zero, stored at once. Lands when the caller's commit group is waited for.
template <int Rows, int H, class E>
SIMT_DEVICE void load_tile(Thread& t, SmemTile<E, Rows, H>& dst, const E* src, size_t stride, int row0, int T) {
  constexpr int kPieces = H / 8;  // 16 bytes each
  for (int e = static_cast<int>(t.thread_idx().x); e < Rows * kPieces; e += Tile<H>::kThreads) {
    const int r = e / kPieces, d = (e % kPieces) * 8;
    if (row0 + r < T) {
      t.cp_async<16>(&dst(r, d), src + static_cast<size_t>(row0 + r) * stride + d);
    } else {
      SIMT_UNROLL
      for (int i = 0; i < 8; i++) dst(r, d + i) = E{0};
    }
  }
}

// The operands of mma.m16n8k16 by ldmatrix.x4 (kernels/simt/fragments.hpp): lane 8 j + r gives
// the address of row r of 8 x 8 matrix j, which lands in register j.
//
// The A operand (16 x 16, row-major) of rows [r0, r0 + 16), columns [c0, c0 + 16) of a tile:
// matrices (rows + 8 (j % 2), columns + 8 (j / 2)) are the registers a0a1, a2a3, a4a5, a6a7.
template <class Tile2D>
SIMT_DEVICE void ldmatrix_a(Thread& t, uint32_t (&a)[4], Tile2D& s, int r0, int c0) {
  const int j = t.lane() / 8, r = t.lane() % 8;
  t.ldmatrix<4>(a, &s(r0 + (j % 2) * 8 + r, c0 + (j / 2) * 8));
}
// The B operands (k 16 x n 8) of the n-tiles n0 and n0 + 8 when the tile holds B^T: n rows
// [n0, n0 + 16), k columns [k0, k0 + 16). b[0..1] of n-tile n0, b[2..3] of n0 + 8.
template <class Tile2D>
SIMT_DEVICE void ldmatrix_bt(Thread& t, uint32_t (&b)[4], Tile2D& s, int n0, int k0) {
  const int j = t.lane() / 8, r = t.lane() % 8;
  t.ldmatrix<4>(b, &s(n0 + (j / 2) * 8 + r, k0 + (j % 2) * 8));
}
// The same when the tile holds B itself: k rows [k0, k0 + 16), n columns [n0, n0 + 16), through
// .trans.
template <class Tile2D>
SIMT_DEVICE void ldmatrix_b(Thread& t, uint32_t (&b)[4], Tile2D& s, int k0, int n0) {
  const int j = t.lane() / 8, r = t.lane() % 8;
  t.ldmatrix<4, true>(b, &s(k0 + (j % 2) * 8 + r, n0 + (j / 2) * 8));
}

// The A operands of the warp's 16 rows [r0, r0 + 16) of a tile, K columns: one per k-step.
template <int K, class Tile2D>
SIMT_DEVICE void load_a(Thread& t, uint32_t (&a)[K / 16][4], Tile2D& s, int r0) {
  SIMT_UNROLL
  for (int kk = 0; kk < K / 16; kk++) ldmatrix_a(t, a[kk], s, r0, 16 * kk);
}

// What a staged tile holds for the product: B^T (n rows of k: K, Q or dO on the right of
// Q K^T, K Q^T, dO V^T) or B (k rows of n: V, dO, Q or K on the right of P V, P^T dO, dS^T Q, dS K).
enum class Holds { bt, b };

// acc (16, N) += A (16, K) B, B (K, N) or B^T (N, K) being rows [0, K) or [0, N) of the tile bs,
// A and B of type E.
template <class E, int K, int N, Holds kHolds, class Tile2D>
SIMT_DEVICE void mma(Thread& t, float (&acc)[N / 8][4], const uint32_t (&a)[K / 16][4], Tile2D& bs) {
  SIMT_UNROLL
  for (int kk = 0; kk < K / 16; kk++) {
    SIMT_UNROLL
    for (int nn = 0; nn < N / 16; nn++) {
      uint32_t b[4];
      if constexpr (kHolds == Holds::bt) ldmatrix_bt(t, b, bs, 16 * nn, 16 * kk);
      else ldmatrix_b(t, b, bs, 16 * kk, 16 * nn);
      const uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
      t.mma_16816<E>(acc[2 * nn], a[kk], b0, acc[2 * nn]);
      t.mma_16816<E>(acc[2 * nn + 1], a[kk], b1, acc[2 * nn + 1]);
    }
  }
}

// Accumulators (16, N) as the A operands (16, N) of the next product, rounded to E: k-step kk
// is n-tiles 2 kk (a0..a3) and 2 kk + 1 (a4..a7), rows g (c0, c1) and g + 8 (c2, c3) of each.
template <class E, int N>
SIMT_DEVICE void to_a(uint32_t (&a)[N / 16][4], const float (&acc)[N / 8][4]) {
  SIMT_UNROLL
  for (int kk = 0; kk < N / 16; kk++) {
    a[kk][0] = simt::pack2<E>(acc[2 * kk][0], acc[2 * kk][1]);
    a[kk][1] = simt::pack2<E>(acc[2 * kk][2], acc[2 * kk][3]);
    a[kk][2] = simt::pack2<E>(acc[2 * kk + 1][0], acc[2 * kk + 1][1]);
    a[kk][3] = simt::pack2<E>(acc[2 * kk + 1][2], acc[2 * kk + 1][3]);
  }
}

// The warp's accumulators (16, N) times `scale`, rounded to E, into rows [r0, r0 + 16) of a
// staged tile that no other warp reads: two adjacent values a thread.
template <int N, class E, class Tile2D>
SIMT_DEVICE void stage_rows(Thread& t, Tile2D& s, int r0, const float (&acc)[N / 8][4], float scale) {
  SIMT_UNROLL
  for (int n = 0; n < N / 8; n++) {
    SIMT_UNROLL
    for (int h = 0; h < 2; h++) {
      const simt::MatrixCoord c = simt::mma_c_coord(t.lane(), 2 * h);
      s.template piece<2>(r0 + c.row, 8 * n + c.col) =
          Packed<E, 2>{{simt::from_float<E>(acc[n][2 * h] * scale), simt::from_float<E>(acc[n][2 * h + 1] * scale)}};
    }
  }
}

// Rows [0, rows) of a staged tile, H values each, to dst[(row0 + r) stride + d]: 16 bytes a
// thread, consecutive threads on consecutive pieces of a row. After the barrier that follows
// every warp's stage_rows.
template <int H, class E, class Tile2D>
SIMT_DEVICE void store_tile(Thread& t, Global<E> dst, size_t stride, int row0, int rows, Tile2D& s) {
  constexpr int kPieces = H / 8;
  for (int e = static_cast<int>(t.thread_idx().x); e < rows * kPieces; e += Tile<H>::kThreads) {
    const int r = e / kPieces, d = (e % kPieces) * 8;
    const Global<Packed<E, 8>> piece(
        reinterpret_cast<Packed<E, 8>*>((dst + (static_cast<size_t>(row0 + r) * stride + d)).get()));
    piece[0] = s.template piece<8>(r, d);
  }
}

// Whether the diagonal crosses a warp's rows [r0, r0 + 16) against the columns [c0, c0 + n):
// some column past some row, so that the causal mask is needed.
SIMT_DEVICE bool crosses(int r0, int c0, int n) { return c0 + n - 1 > r0; }

// The max and the sum over the quad of lanes that shares a row of the accumulators.
SIMT_DEVICE float quad_max(Thread& t, float v) {
  v = simt::fmaxf_(v, t.shfl_xor(simt::kFullMask, v, 1));
  return simt::fmaxf_(v, t.shfl_xor(simt::kFullMask, v, 2));
}
SIMT_DEVICE float quad_sum(Thread& t, float v) {
  v += t.shfl_xor(simt::kFullMask, v, 1);
  return v + t.shfl_xor(simt::kFullMask, v, 2);
}

// A kernel's name by its element type and head size, for the counts and the profiles.
template <class E, int H>
constexpr const char* named(const char* bf16_64, const char* bf16_128, const char* fp16_64, const char* fp16_128) {
  return H == 64 ? simt::named<E>("", bf16_64, fp16_64) : simt::named<E>("", bf16_128, fp16_128);
}

// Grid (ceil(T / 128), B NH), block 256: the blocks of sample b are (x, b NH + r), r < NH, and
// the n-th of them in launch order, n = x + gridDim.x r, owns queries [i0, i0 + 128) of query
// head n % NH, i0 = 128 (gridDim.x - 1 - n / NH): a sample's heaviest blocks (its last query
// tiles, which see the most keys) are dealt first, its lightest last, so that the launch's last
// wave is of short blocks (the samples stay in grid order, as the profiles' scaling takes them).
// Warp w owns the 16 queries from i0 + 16 w: its Q fragments (registers), O (16, H) and, for its
// two rows g and g + 8 per thread, the running max m (base 2, scaled) and this thread's part of
// the sum l. Each key tile of its K/V head: K's copy waited for, S; then V's, P V, while the next
// K and V are copied.
template <class E, int H>
struct ForwardKernel {
  using Tl = Tile<H>;
  static constexpr int kRows = Tl::kRows, kCols = Tl::kCols;
  static constexpr int kThreadsPerBlock = Tl::kThreads, kMinBlocksPerSm = Tl::kMinBlocksPerSm;
  static constexpr const char* kName = named<E, H>("attention_forward_bf16<64>", "attention_forward_bf16<128>",
                                                   "attention_forward_fp16<64>", "attention_forward_fp16<128>");
  struct Smem {
    alignas(16) SmemTile<E, kRows, H> q;           // queries [i0, i0 + 128), read once; then O staged
    alignas(16) SmemTile<E, kCols, H> k[2], v[2];  // keys [j0, j0 + 64), double-buffered
  };
  Global<E> out;        // (B, T, NH H)
  Global<float> lse;    // (B, NH, T)
  Global<const E> qkv;  // (B, T, (NH + 2 NKV) H)
  int T;
  AttentionHeads heads;  // hs = H
  float scale;           // 1 / sqrt(H)

  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const int query_tiles = static_cast<int>(t.grid_dim().x), bh = static_cast<int>(t.block_idx().y);
    const int n = static_cast<int>(t.block_idx().x) + query_tiles * (bh % heads.NH);  // the sample's n-th block
    const attn::HeadView at(bh / heads.NH, n % heads.NH, T, heads);
    const size_t C3 = heads.qkv_row();
    const E *q_src = qkv.get() + at.q, *k_src = qkv.get() + at.k, *v_src = qkv.get() + at.v;
    const int i0 = (query_tiles - 1 - n / heads.NH) * kRows, w0 = i0 + simt::kMmaM * t.warp();
    const int tiles = (simt::imin(i0 + kRows, T) + kCols - 1) / kCols;  // keys up to the block's last query
    const int last_row = simt::imin(w0 + simt::kMmaM, T) - 1;            // the warp's last row before T
    const float scale_log2 = scale * kLog2e;

    load_tile<kRows, H>(t, s.q, q_src, C3, i0, T);
    load_tile<kCols, H>(t, s.k[0], k_src, C3, 0, T);
    t.cp_async_commit();
    load_tile<kCols, H>(t, s.v[0], v_src, C3, 0, T);
    t.cp_async_commit();
    uint32_t q[H / 16][4];
    float o[H / 8][4] = {};
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // rows g and g + 8
    for (int j = 0; j < tiles; j++) {
      const int buffer = j % 2, j0 = j * kCols;
      const bool more = j + 1 < tiles;
      t.cp_async_wait<1>();  // K_j (and Q) landed; V_j may still be in flight
      t.sync();              // for every thread; and every warp is done with tile j - 1
      if (more) {
        load_tile<kCols, H>(t, s.k[1 - buffer], k_src, C3, j0 + kCols, T);
        t.cp_async_commit();
      }
      if (j == 0) load_a<H>(t, q, s.q, w0 - i0);
      const bool seen = w0 < T && j0 <= last_row;  // some row of the warp sees a key of the tile
      uint32_t p[kCols / 16][4];
      if (seen) {
        float sc[kCols / 8][4] = {};
        mma<E, H, kCols, Holds::bt>(t, sc, q, s.k[buffer]);  // S (16, 64)
        const bool masked = crosses(w0, j0, kCols);
        SIMT_UNROLL
        for (int h = 0; h < 2; h++) {  // the thread's rows: c0, c1 of row g, c2, c3 of row g + 8
          const int query = w0 + simt::mma_c_coord(t.lane(), 2 * h).row;
          float row_max = m[h];
          SIMT_UNROLL
          for (int n = 0; n < kCols / 8; n++) {
            SIMT_UNROLL
            for (int i = 2 * h; i < 2 * h + 2; i++) {
              const int key = j0 + 8 * n + simt::mma_c_coord(t.lane(), i).col;
              sc[n][i] = !masked || key <= query ? sc[n][i] * scale_log2 : -INFINITY;
              row_max = simt::fmaxf_(row_max, sc[n][i]);
            }
          }
          // Finite: key 0 is visible to every query, and tile 0 comes first.
          row_max = quad_max(t, row_max);
          const float correction = simt::exp2f_(m[h] - row_max);  // exp2(-inf) = 0 at the first tile
          m[h] = row_max;
          l[h] *= correction;
          SIMT_UNROLL
          for (int n = 0; n < H / 8; n++) {
            o[n][2 * h] *= correction;
            o[n][2 * h + 1] *= correction;
          }
          SIMT_UNROLL
          for (int n = 0; n < kCols / 8; n++) {
            SIMT_UNROLL
            for (int i = 2 * h; i < 2 * h + 2; i++) {
              sc[n][i] = simt::exp2f_(sc[n][i] - row_max);  // masked: exp2(-inf) = 0
              l[h] += sc[n][i];                              // the fp32 P: l is not rounded
            }
          }
        }
        to_a<E, kCols>(p, sc);
      }
      if (more) t.cp_async_wait<1>();  // V_j landed; K_{j+1} may still be in flight
      else t.cp_async_wait<0>();
      t.sync();
      if (more) {
        load_tile<kCols, H>(t, s.v[1 - buffer], v_src, C3, j0 + kCols, T);
        t.cp_async_commit();
      }
      if (seen) mma<E, kCols, H, Holds::b>(t, o, p, s.v[buffer]);  // O += P V, P in E
    }
    float inv[2];
    SIMT_UNROLL
    for (int h = 0; h < 2; h++) {
      const float sum = quad_sum(t, l[h]);
      inv[h] = 1.f / sum;
      const int query = w0 + simt::mma_c_coord(t.lane(), 2 * h).row;
      if (t.lane() % 4 == 0 && query < T) lse[at.lse + query] = (m[h] + simt::log2f_(sum)) * kLn2;
    }
    SIMT_UNROLL
    for (int n = 0; n < H / 8; n++) {
      SIMT_UNROLL
      for (int i = 0; i < 4; i++) o[n][i] *= inv[i / 2];
    }
    stage_rows<H, E>(t, s.q, w0 - i0, o, 1.f);  // the warp's own rows of Q, read into registers
    t.sync();
    store_tile<H>(t, out + at.out, heads.out_row(), i0, simt::imin(kRows, T - i0), s.q);
  }
};

// D (B, NH, T) = rowsum(dO * O) over each head's hs dims, fp32 from the values in E. Thread e
// owns piece e of the rows in D's order (b, h, t): the 8 values [8 k, 8 k + 8) of row e / (hs /
// 8), k = e % (hs / 8), read as one 16-byte piece of dO and one of O, so that a warp reads whole
// 128-byte lines (two rows of hs 128, four of hs 64: the hs / 8 lanes of a row are consecutive
// lanes of one warp). A row's sum runs in the order d = 0, 1, ..., hs - 1, as one thread adding
// the row alone would (the CPU twin's order, and the bits of D whatever the layout): the lane of
// piece k adds its products to the sum of pieces 0 .. k - 1, which the lane before hands on. The
// products of two values in E are exact in fp32, so a compiler's fused multiply-add changes no bit.
template <class E>
struct DeltaKernel {
  static constexpr const char* kName =
      simt::named<E>("", "attention_backward_bf16_delta", "attention_backward_fp16_delta");
  static constexpr int kPiece = 8;  // values of E in one 16-byte load
  using Piece = Packed<E, kPiece>;
  Global<float> D;           // (B, NH, T)
  Global<const Piece> dout;  // (B, T, NH hs / 8)
  Global<const Piece> out;   // (B, T, NH hs / 8)
  int B, T;
  AttentionHeads heads;      // hs 64 or 128: hs / 8 lanes, a divisor of the warp, hold a row

  SIMT_DEVICE void operator()(Thread& t) const {
    const int NH = heads.NH, pieces = heads.hs / kPiece;
    const size_t n = static_cast<size_t>(B) * NH * T * pieces;
    const size_t warps_cover = (n + kWarp - 1) / kWarp * kWarp;  // whole warps loop, for the shuffles
    for (size_t e = global_index(t); e < warps_cover; e += grid_stride(t)) {
      const size_t row = e / pieces, bh = row / T, tt = row % T;  // D's row (b, h, t)
      const int k = static_cast<int>(e % pieces);
      const size_t at = ((bh / NH * T + tt) * NH + bh % NH) * pieces + k;  // piece k of row (b, t, h)
      const bool mine = e < n;
      Piece g{}, o{};
      if (mine) {
        g = dout[at];
        o = out[at];
      }
      float sum = 0.f;
      for (int j = 0; j < pieces; j++) {
        if (k == j) {
          SIMT_UNROLL
          for (int i = 0; i < kPiece; i++) sum += simt::to_float(g.h[i]) * simt::to_float(o.h[i]);
        }
        const float before = t.shfl_up(simt::kFullMask, sum, 1);
        if (k == j + 1) sum = before;
      }
      if (mine && k == pieces - 1) D[row] = sum;
    }
  }
};

// What both backward kernels read, and dqkv (B, T, (NH + 2 NKV) H), of which each writes its
// parts: dq, or dk and dv. A kernel deriving from it names the members it uses (the base depends
// on E).
template <class E>
struct BackwardArgs {
  Global<E> dqkv;           // (B, T, (NH + 2 NKV) H)
  Global<const E> dout;     // (B, T, NH H)
  Global<const E> qkv;      // (B, T, (NH + 2 NKV) H)
  Global<const float> lse;  // (B, NH, T)
  Global<const float> D;    // (B, NH, T)
  int T;
  AttentionHeads heads;     // hs = H
  float scale;              // 1 / sqrt(H)
};

// Grid (ceil(T / 128), B NKV), block 256: block (x, bg) owns keys [j0, j0 + 128), j0 = 128 x, of
// K/V head bg % NKV of sample bg / NKV, warp w the 16 of them from j0 + 16 w and their dK, dV
// (16, H), summed over the queries [j0, T) of each query head of the group in turn, in staged
// tiles of kStep (with their lse and D): one sequence of steps, group x steps long, so that the
// next head's first tile is copied while the last one's is multiplied, and the sums run in one
// fixed order whatever the launch. K and V sit in shared memory
// for the whole loop and are read as A operands at each step: held in registers beside dK and dV
// they would take 64 more a thread at H = 128.
template <class E, int H>
struct BackwardDkdvKernel : BackwardArgs<E> {
  using Args = BackwardArgs<E>;
  using Args::dqkv, Args::dout, Args::qkv, Args::lse, Args::D, Args::T, Args::heads, Args::scale;
  using Tl = Tile<H>;
  static constexpr int kRows = Tl::kRows, kStep = Tl::kStep;
  static constexpr int kThreadsPerBlock = Tl::kThreads, kMinBlocksPerSm = Tl::kMinBlocksPerSm;
  static constexpr const char* kName =
      named<E, H>("attention_backward_bf16_dkdv<64>", "attention_backward_bf16_dkdv<128>",
                  "attention_backward_fp16_dkdv<64>", "attention_backward_fp16_dkdv<128>");
  struct Smem {
    alignas(16) SmemTile<E, kRows, H> k, v;           // keys [j0, j0 + 128); then dK and dV staged
    alignas(16) SmemTile<E, kStep, H> q[2], dout[2];  // queries [r0, r0 + kStep), double-buffered
    alignas(16) simt::SharedArray<float, kStep> lse[2], D[2];
  };

  // Queries [r0, r0 + kStep) of query head h of sample b: Q, dO, lse and D, by cp.async; lse and
  // D past T are 0 (any finite value: P is masked there).
  SIMT_DEVICE void load_queries(Thread& t, Smem& s, int buffer, int b, int h, int r0) const {
    const attn::HeadView at(b, h, T, heads);
    load_tile<kStep, H>(t, s.q[buffer], qkv.get() + at.q, heads.qkv_row(), r0, T);
    load_tile<kStep, H>(t, s.dout[buffer], dout.get() + at.out, heads.out_row(), r0, T);
    for (int r = static_cast<int>(t.thread_idx().x); r < kStep; r += Tl::kThreads) {
      if (r0 + r < T) {
        t.cp_async<4>(&s.lse[buffer](r), lse.get() + at.lse + r0 + r);
        t.cp_async<4>(&s.D[buffer](r), D.get() + at.lse + r0 + r);
      } else {
        s.lse[buffer](r) = 0.f;
        s.D[buffer](r) = 0.f;
      }
    }
    t.cp_async_commit();
  }

  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const int bg = static_cast<int>(t.block_idx().y), b = bg / heads.NKV, h0 = bg % heads.NKV * heads.group();
    const attn::HeadView kv(b, h0, T, heads);  // the K/V head's offsets (those of its group's first query head)
    const size_t C3 = heads.qkv_row();
    const int j0 = static_cast<int>(t.block_idx().x) * kRows, w0 = j0 + simt::kMmaM * t.warp();
    const int tiles = (T - j0 + kStep - 1) / kStep;  // per query head: queries before j0 see none of these keys
    const int steps = heads.group() * tiles;         // step i: query head h0 + i / tiles, tile i % tiles
    const float scale_log2 = scale * kLog2e;

    load_tile<kRows, H>(t, s.k, qkv.get() + kv.k, C3, j0, T);
    load_tile<kRows, H>(t, s.v, qkv.get() + kv.v, C3, j0, T);
    load_queries(t, s, 0, b, h0, j0);  // its commit takes K and V along
    float dk[H / 8][4] = {}, dv[H / 8][4] = {};
    for (int step = 0; step < steps; step++) {
      const int buffer = step % 2, r0 = j0 + step % tiles * kStep, next = step + 1;
      t.cp_async_wait<0>();
      t.sync();  // this step's queries have landed, and every warp is done with the last step's
      if (next < steps) load_queries(t, s, 1 - buffer, b, h0 + next / tiles, j0 + next % tiles * kStep);
      // The warp's keys [w0, w0 + 16) are seen by some query of the step when the step's last
      // query is at or past w0; the mask is needed where a query precedes a key or passes T.
      if (w0 >= T || r0 + kStep - 1 < w0) continue;
      const bool masked = crosses(r0, w0, simt::kMmaM) || r0 + kStep > T;
      float st[kStep / 8][4] = {}, dpt[kStep / 8][4] = {};  // S^T, then P^T; dP^T, then dS^T
      {
        uint32_t a[H / 16][4];
        load_a<H>(t, a, s.k, w0 - j0);
        mma<E, H, kStep, Holds::bt>(t, st, a, s.q[buffer]);  // S^T = K Q^T (16, kStep)
        load_a<H>(t, a, s.v, w0 - j0);
        mma<E, H, kStep, Holds::bt>(t, dpt, a, s.dout[buffer]);  // dP^T = V dO^T
      }
      SIMT_UNROLL
      for (int n = 0; n < kStep / 8; n++) {
        SIMT_UNROLL
        for (int i = 0; i < 4; i++) {
          const simt::MatrixCoord c = simt::mma_c_coord(t.lane(), i);
          const int key = w0 + c.row, r = 8 * n + c.col, query = r0 + r;
          const bool visible = !masked || (query >= key && query < T);
          const float p = visible ? simt::exp2f_(st[n][i] * scale_log2 - s.lse[buffer](r) * kLog2e) : 0.f;
          st[n][i] = p;
          dpt[n][i] = p * (dpt[n][i] - s.D[buffer](r));  // dS^T, unscaled
        }
      }
      uint32_t a[kStep / 16][4];
      to_a<E, kStep>(a, st);
      mma<E, kStep, H, Holds::b>(t, dv, a, s.dout[buffer]);  // dV += P^T dO
      to_a<E, kStep>(a, dpt);
      mma<E, kStep, H, Holds::b>(t, dk, a, s.q[buffer]);  // dK += dS^T Q, scaled when stored
    }
    t.sync();  // every lane is done reading K and V (ldmatrix reads rows other lanes write here)
    stage_rows<H, E>(t, s.k, w0 - j0, dk, scale);  // the warp's own rows of K and V
    stage_rows<H, E>(t, s.v, w0 - j0, dv, 1.f);
    t.sync();
    const int rows = simt::imin(kRows, T - j0);
    store_tile<H>(t, dqkv + kv.k, C3, j0, rows, s.k);
    store_tile<H>(t, dqkv + kv.v, C3, j0, rows, s.v);
  }
};

// Grid (ceil(T / 128), B NH), block 256: block (x, bh) owns queries [i0, i0 + 128), i0 = 128 x,
// of query head bh (sample bh / NH), warp w the 16 of them from i0 + 16 w: their Q and dO
// fragments (registers), lse and D of its rows g and g + 8, and dQ (16, H), summed over the keys
// of its K/V head up to the block's last query in staged tiles of kStep.
template <class E, int H>
struct BackwardDqKernel : BackwardArgs<E> {
  using Args = BackwardArgs<E>;
  using Args::dqkv, Args::dout, Args::qkv, Args::lse, Args::D, Args::T, Args::heads, Args::scale;
  using Tl = Tile<H>;
  static constexpr int kRows = Tl::kRows, kStep = Tl::kStep;
  static constexpr int kThreadsPerBlock = Tl::kThreads, kMinBlocksPerSm = Tl::kMinBlocksPerSm;
  static constexpr const char* kName = named<E, H>("attention_backward_bf16_dq<64>", "attention_backward_bf16_dq<128>",
                                                   "attention_backward_fp16_dq<64>", "attention_backward_fp16_dq<128>");
  struct Smem {
    alignas(16) SmemTile<E, kRows, H> q, dout;     // queries [i0, i0 + 128), read once; then dQ staged in q
    alignas(16) SmemTile<E, kStep, H> k[2], v[2];  // keys [c0, c0 + kStep), double-buffered
  };

  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const attn::HeadView at = attn::HeadView::of(static_cast<int>(t.block_idx().y), T, heads);
    const size_t C3 = heads.qkv_row();
    const E *k_src = qkv.get() + at.k, *v_src = qkv.get() + at.v;
    const int i0 = static_cast<int>(t.block_idx().x) * kRows, w0 = i0 + simt::kMmaM * t.warp();
    const int steps = (simt::imin(i0 + kRows, T) + kStep - 1) / kStep;
    const int last_row = simt::imin(w0 + simt::kMmaM, T) - 1;  // the warp's last row before T
    const float scale_log2 = scale * kLog2e;

    load_tile<kRows, H>(t, s.q, qkv.get() + at.q, C3, i0, T);
    load_tile<kRows, H>(t, s.dout, dout.get() + at.out, heads.out_row(), i0, T);
    load_tile<kStep, H>(t, s.k[0], k_src, C3, 0, T);
    load_tile<kStep, H>(t, s.v[0], v_src, C3, 0, T);
    t.cp_async_commit();
    float L[2], Dr[2];  // rows g and g + 8: lse in base 2, D; past T any finite value, nothing is stored there
    SIMT_UNROLL
    for (int h = 0; h < 2; h++) {
      const int query = w0 + simt::mma_c_coord(t.lane(), 2 * h).row;
      L[h] = query < T ? static_cast<float>(lse[at.lse + query]) * kLog2e : 0.f;
      Dr[h] = query < T ? static_cast<float>(D[at.lse + query]) : 0.f;
    }
    uint32_t q[H / 16][4], d_o[H / 16][4];
    float dq[H / 8][4] = {};
    for (int step = 0; step < steps; step++) {
      const int buffer = step % 2, c0 = step * kStep;
      t.cp_async_wait<0>();
      t.sync();  // this step's keys have landed, and every warp is done with the last step's
      if (step + 1 < steps) {
        load_tile<kStep, H>(t, s.k[1 - buffer], k_src, C3, c0 + kStep, T);
        load_tile<kStep, H>(t, s.v[1 - buffer], v_src, C3, c0 + kStep, T);
        t.cp_async_commit();
      }
      if (step == 0) {
        load_a<H>(t, q, s.q, w0 - i0);
        load_a<H>(t, d_o, s.dout, w0 - i0);
      }
      if (w0 >= T || c0 > last_row) continue;  // no row of the warp sees a key of the step
      const bool masked = crosses(w0, c0, kStep);
      float sc[kStep / 8][4] = {}, dp[kStep / 8][4] = {};  // S, then dS; dP
      mma<E, H, kStep, Holds::bt>(t, sc, q, s.k[buffer]);    // S = Q K^T (16, kStep)
      mma<E, H, kStep, Holds::bt>(t, dp, d_o, s.v[buffer]);  // dP = dO V^T
      SIMT_UNROLL
      for (int n = 0; n < kStep / 8; n++) {
        SIMT_UNROLL
        for (int i = 0; i < 4; i++) {
          const simt::MatrixCoord c = simt::mma_c_coord(t.lane(), i);
          const int query = w0 + c.row, key = c0 + 8 * n + c.col;
          const float p = !masked || key <= query ? simt::exp2f_(sc[n][i] * scale_log2 - L[i / 2]) : 0.f;
          sc[n][i] = p * (dp[n][i] - Dr[i / 2]);  // dS, unscaled
        }
      }
      uint32_t a[kStep / 16][4];
      to_a<E, kStep>(a, sc);
      mma<E, kStep, H, Holds::b>(t, dq, a, s.k[buffer]);  // dQ += dS K, scaled when stored
    }
    t.sync();  // every lane is done reading Q (ldmatrix reads rows other lanes write here)
    stage_rows<H, E>(t, s.q, w0 - i0, dq, scale);  // the warp's own rows of Q, read into registers
    t.sync();
    store_tile<H>(t, dqkv + at.q, C3, i0, simt::imin(kRows, T - i0), s.q);
  }
};

// One block per 128 rows and head (query heads, or K/V heads for dK and dV: `heads` of them per
// sample), for every kernel but delta.
template <int H, class Kernel>
LaunchShape shape_of(int B, int T, int heads) {
  return {Dim3(static_cast<unsigned>(ceil_div(static_cast<size_t>(T), Tile<H>::kRows)),
               static_cast<unsigned>(B * heads)),
          Dim3(Tile<H>::kThreads), sizeof(typename Kernel::Smem)};
}

// The head size the kernels are compiled for; any other is refused before a launch.
inline int head_size(AttentionHeads heads) {
  if (heads.hs != 64 && heads.hs != 128)
    throw std::invalid_argument("GPU flash attention (bf16, fp16): head size " + std::to_string(heads.hs) +
                                " is not one of the 64 and 128 its kernels are compiled for");
  return heads.hs;
}

template <int H, class Launch, class E>
void forward(Launch& launch, E* out, float* lse, const E* qkv, int B, int T, AttentionHeads heads) {
  const float scale = 1.f / std::sqrt(static_cast<float>(H));
  launch.kernel(ForwardKernel<E, H>{out, lse, qkv, T, heads, scale}, shape_of<H, ForwardKernel<E, H>>(B, T, heads.NH));
}

template <int H, class Launch, class E>
void backward(Launch& launch, E* dqkv, const E* dout, const E* qkv, const E* out, const float* lse, int B, int T,
              AttentionHeads heads) {
  const size_t rows = static_cast<size_t>(B) * heads.NH * T;
  float* D = static_cast<float*>(launch.scratch(attention_backward16_scratch_bytes(B, T, heads.NH)));  // (B, NH, T)
  using Delta = DeltaKernel<E>;
  using Piece = typename Delta::Piece;
  launch.kernel(Delta{D, reinterpret_cast<const Piece*>(dout), reinterpret_cast<const Piece*>(out), B, T, heads},
                LaunchShape{Dim3(grid_for(rows * (H / Delta::kPiece), 256)), Dim3(256), 0});
  const BackwardArgs<E> args{dqkv, dout, qkv, lse, D, T, heads, 1.f / std::sqrt(static_cast<float>(H))};
  launch.kernel(BackwardDkdvKernel<E, H>{args}, shape_of<H, BackwardDkdvKernel<E, H>>(B, T, heads.NKV));
  launch.kernel(BackwardDqKernel<E, H>{args}, shape_of<H, BackwardDqKernel<E, H>>(B, T, heads.NH));
}

}  // namespace flash

// out (B, T, NH hs), lse (B, NH, T) from qkv (B, T, (NH + 2 NKV) hs), all but lse in E = bf16 or
// fp16. qkv must be 16-byte aligned (cp.async reads it in 16-byte pieces).
template <class Launch, class E>
void attention_forward16(Launch& launch, E* out, float* lse, const E* qkv, int B, int T, AttentionHeads heads) {
  const int hs = flash::head_size(heads);
  if (B == 0 || T == 0) return;
  if (hs == 64) return flash::forward<64>(launch, out, lse, qkv, B, T, heads);
  return flash::forward<128>(launch, out, lse, qkv, B, T, heads);
}

// dqkv (B, T, (NH + 2 NKV) hs), overwritten, from dout (B, T, NH hs) and forward's qkv, out and
// lse. All four in E 16-byte aligned, as the forward's qkv and out are (read and stored in 16-byte
// pieces).
template <class Launch, class E>
void attention_backward16(Launch& launch, E* dqkv, const E* dout, const E* qkv, const E* out, const float* lse, int B,
                          int T, AttentionHeads heads) {
  const int hs = flash::head_size(heads);
  if (B == 0 || T == 0) return;
  if (hs == 64) return flash::backward<64>(launch, dqkv, dout, qkv, out, lse, B, T, heads);
  return flash::backward<128>(launch, dqkv, dout, qkv, out, lse, B, T, heads);
}

}  // namespace eth::kernels::gpu_ops

// Causal self-attention that never stores the (T, T) probabilities (FlashAttention-2's scheme on
// the CPU). Forward walks each query tile over the key tiles up to the diagonal with an online
// softmax (a running max and sum per row), and keeps one number per row for backward: the
// log-sum-exp of its scaled scores. Backward recomputes each probability tile from q, k and
// that statistic, so a layer keeps (B, NH, T) floats instead of (B, NH, T, T).
//
// Every tile product is a small GEMM over strided views of qkv (row stride (NH + 2 NKV) hs), at sgemm speed;
// tiles above the diagonal are skipped, which halves the attention FLOPs of the materialised
// version (kernels/cpu/gpt_ops.cpp), whose full T x T products cover the masked half too.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/gpt_ops.hpp"

namespace eth::kernels::cpu {
namespace {

// 64 x 64 tiles: with head size 64 a tile's q, k, v, scores and accumulators (5 x 16 KB in
// fp32) stay in a Zen3 core's 512 KB L2, and each tile GEMM (64^3 multiply-adds) is large
// enough that sgemm's per-call overhead stays small.
constexpr int kTile = 64;

// x[c] = exp(x[c] - shift), c < n, shift >= every x[c] (the row max or the row's log-sum-exp).
// float: Cephes' expf polynomial (relative error about 1e-7, fp32 rounding) in plain arithmetic,
// which GCC vectorises; the libm call does not vectorise without -ffast-math, and it was the
// blocked kernels' largest cost, since backward recomputes every exponential forward took.
// double keeps std::exp: the finite-difference tests need double precision.
inline void exp_shifted(float* x, int n, float shift) {
#pragma omp simd
  for (int c = 0; c < n; c++) {
    const float z = std::max(x[c] - shift, -87.0f);                    // below: 0 to fp32 precision
    const float k = (z * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round(z / ln 2)
    float r = z - k * 0.693359375f;                                    // z - k ln 2, in two parts
    r = r + k * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float e = p * r * r + r + 1.0f;                               // exp(r), |r| <= ln 2 / 2
    const int32_t two_k = (static_cast<int32_t>(k) + 127) << 23;        // 2^k as float bits
    x[c] = e * std::bit_cast<float>(two_k);
  }
}
inline void exp_shifted(double* x, int n, double shift) {
  for (int c = 0; c < n; c++) x[c] = std::exp(x[c] - shift);
}

// Query rows [i0, i0 + rows) against key columns [j0, j0 + cols): the number of keys row r may
// see (causal: key <= query), from 0 to cols.
inline int visible_keys(int i0, int r, int j0, int cols) { return std::clamp(i0 + r - j0 + 1, 0, cols); }

// Views of one (sample, query head): q and its K/V head's k and v (and their gradients) are
// row-strided by (NH + 2 NKV) hs, out and dout by NH hs, the statistics contiguous.
struct Head {
  size_t q, k, v, out, lse;  // offsets
  Head(int b, int h, int T, const AttentionHeads& heads)
      : q(static_cast<size_t>(b) * T * heads.qkv_row() + heads.q(h)),
        k(static_cast<size_t>(b) * T * heads.qkv_row() + heads.k(heads.kv_head(h))),
        v(static_cast<size_t>(b) * T * heads.qkv_row() + heads.v(heads.kv_head(h))),
        out(static_cast<size_t>(b) * T * heads.out_row() + heads.q(h)),
        lse((static_cast<size_t>(b) * heads.NH + h) * T) {}
};

}  // namespace

template <typename F>
void flash_attention_forward(F* out, F* lse, const F* qkv, int B, int T, AttentionHeads heads) {
  const int hs = heads.hs, NH = heads.NH;
  const int C3 = static_cast<int>(heads.qkv_row()), C = static_cast<int>(heads.out_row());  // row strides
  const F scale = F(1) / std::sqrt(static_cast<F>(hs));
  const int tiles = (T + kTile - 1) / kTile;
  // Query tile i costs i + 1 key tiles: dynamic scheduling evens out the triangle.
#pragma omp parallel
  {
    std::vector<F> s(kTile * kTile), acc(static_cast<size_t>(kTile) * hs), m(kTile), l(kTile);
#pragma omp for collapse(3) schedule(dynamic)
    for (int b = 0; b < B; b++) {
      for (int h = 0; h < NH; h++) {
        for (int i = 0; i < tiles; i++) {
          const Head at(b, h, T, heads);
          const F* q = qkv + at.q;
          const F* k = qkv + at.k;
          const F* v = qkv + at.v;
          const int i0 = i * kTile, rows = std::min(kTile, T - i0);
          std::fill(m.begin(), m.end(), -std::numeric_limits<F>::infinity());
          std::fill(l.begin(), l.end(), F(0));
          std::fill(acc.begin(), acc.end(), F(0));
          for (int j = 0; j <= i; j++) {
            const int j0 = j * kTile, cols = std::min(kTile, T - j0);
            gemm(false, true, rows, cols, hs, scale, q + static_cast<size_t>(i0) * C3, C3,
                 k + static_cast<size_t>(j0) * C3, C3, F(0), s.data(), kTile);  // S = scale Q K^T
            for (int r = 0; r < rows; r++) {
              F* row = s.data() + static_cast<size_t>(r) * kTile;
              const int n = visible_keys(i0, r, j0, cols);  // >= 1: j <= i
              F new_max = m[r];
#pragma omp simd reduction(max : new_max)
              for (int c = 0; c < n; c++) new_max = std::max(new_max, row[c]);
              exp_shifted(row, n, new_max);
              F sum = F(0);
#pragma omp simd reduction(+ : sum)
              for (int c = 0; c < n; c++) sum += row[c];
              for (int c = n; c < cols; c++) row[c] = F(0);  // masked keys add nothing to P V
              if (new_max != m[r]) {  // rescale what earlier tiles accumulated (exp(-inf) = 0 at first)
                const F correction = std::exp(m[r] - new_max);
                l[r] *= correction;
                F* a = acc.data() + static_cast<size_t>(r) * hs;
                for (int c = 0; c < hs; c++) a[c] *= correction;
                m[r] = new_max;
              }
              l[r] += sum;
            }
            gemm(false, false, rows, hs, cols, F(1), s.data(), kTile, v + static_cast<size_t>(j0) * C3, C3,
                 F(1), acc.data(), hs);  // acc += P V
          }
          for (int r = 0; r < rows; r++) {
            const F inv = F(1) / l[r];
            const F* a = acc.data() + static_cast<size_t>(r) * hs;
            F* o = out + at.out + static_cast<size_t>(i0 + r) * C;
            for (int c = 0; c < hs; c++) o[c] = a[c] * inv;
            lse[at.lse + static_cast<size_t>(i0) + r] = m[r] + std::log(l[r]);
          }
        }
      }
    }
  }
}

template <typename F>
void flash_attention_backward(F* dqkv, const F* dout, const F* qkv, const F* out, const F* lse,
                              int B, int T, AttentionHeads heads) {
  const int hs = heads.hs, group = heads.group();
  const int C3 = static_cast<int>(heads.qkv_row()), C = static_cast<int>(heads.out_row());  // row strides
  const F scale = F(1) / std::sqrt(static_cast<F>(hs));
  const int tiles = (T + kTile - 1) / kTile;
  // One (sample, K/V head) per iteration: its key tiles run in order, each summing dK and dV over
  // its group's query heads in order (bits independent of the threads), and each query tile's dQ
  // is summed in place over the key tiles without a race or a reduction buffer.
#pragma omp parallel
  {
    std::vector<F> p(kTile * kTile), dp(kTile * kTile), dk(static_cast<size_t>(kTile) * hs),
        dv(static_cast<size_t>(kTile) * hs), D(static_cast<size_t>(group) * T);
#pragma omp for collapse(2) schedule(dynamic)
    for (int b = 0; b < B; b++) {
      for (int g = 0; g < heads.NKV; g++) {
        const Head first(b, g * group, T, heads);
        const F* k = qkv + first.k;
        const F* v = qkv + first.v;
        // D_t = rowsum(dO_t * O_t) = sum_j P_tj dP_tj, the softmax backward's dot per row, per head.
        for (int i = 0; i < group; i++) {
          const Head at(b, g * group + i, T, heads);
          for (int t = 0; t < T; t++) {
            const F* dO = dout + at.out + static_cast<size_t>(t) * C;
            const F* o = out + at.out + static_cast<size_t>(t) * C;
            F d = F(0);
            for (int c = 0; c < hs; c++) d += dO[c] * o[c];
            D[static_cast<size_t>(i) * T + t] = d;
            std::fill(dqkv + at.q + static_cast<size_t>(t) * C3, dqkv + at.q + static_cast<size_t>(t) * C3 + hs, F(0));
          }
        }
        for (int j = 0; j < tiles; j++) {
          const int j0 = j * kTile, cols = std::min(kTile, T - j0);
          const F* kj = k + static_cast<size_t>(j0) * C3;
          const F* vj = v + static_cast<size_t>(j0) * C3;
          std::fill(dk.begin(), dk.end(), F(0));
          std::fill(dv.begin(), dv.end(), F(0));
          for (int h = 0; h < group; h++) {
            const Head at(b, g * group + h, T, heads);
            const F* q = qkv + at.q;
            F* dq = dqkv + at.q;
            const F* dO = dout + at.out;
            const F* L = lse + at.lse;
            const F* Dh = D.data() + static_cast<size_t>(h) * T;
            for (int i = j; i < tiles; i++) {
              const int i0 = i * kTile, rows = std::min(kTile, T - i0);
              const F* qi = q + static_cast<size_t>(i0) * C3;
              const F* dOi = dO + static_cast<size_t>(i0) * C;
              gemm(false, true, rows, cols, hs, scale, qi, C3, kj, C3, F(0), p.data(), kTile);  // S
              gemm(false, true, rows, cols, hs, F(1), dOi, C, vj, C3, F(0), dp.data(), kTile);  // dP = dO V^T
              for (int r = 0; r < rows; r++) {
                F* prow = p.data() + static_cast<size_t>(r) * kTile;
                F* dsrow = dp.data() + static_cast<size_t>(r) * kTile;
                const int n = visible_keys(i0, r, j0, cols);
                const F lse_r = L[i0 + r], D_r = Dh[i0 + r];
                exp_shifted(prow, n, lse_r);  // P, recomputed
#pragma omp simd
                for (int c = 0; c < n; c++) dsrow[c] = prow[c] * (dsrow[c] - D_r);  // dS = P (dP - D)
                for (int c = n; c < cols; c++) prow[c] = dsrow[c] = F(0);
              }
              gemm(true, false, cols, hs, rows, F(1), p.data(), kTile, dOi, C, F(1), dv.data(), hs);  // dV += P^T dO
              gemm(false, false, rows, hs, cols, scale, dp.data(), kTile, kj, C3, F(1),
                   dq + static_cast<size_t>(i0) * C3, C3);                                             // dQ += scale dS K
              gemm(true, false, cols, hs, rows, scale, dp.data(), kTile, qi, C3, F(1), dk.data(), hs);  // dK += scale dS^T Q
            }
          }
          for (int c = 0; c < cols; c++) {
            std::copy_n(dk.data() + static_cast<size_t>(c) * hs, hs, dqkv + first.k + static_cast<size_t>(j0 + c) * C3);
            std::copy_n(dv.data() + static_cast<size_t>(c) * hs, hs, dqkv + first.v + static_cast<size_t>(j0 + c) * C3);
          }
        }
      }
    }
  }
}

template void flash_attention_forward<float>(float*, float*, const float*, int, int, AttentionHeads);
template void flash_attention_forward<double>(double*, double*, const double*, int, int, AttentionHeads);
template void flash_attention_backward<float>(float*, const float*, const float*, const float*, const float*,
                                              int, int, AttentionHeads);
template void flash_attention_backward<double>(double*, const double*, const double*, const double*,
                                               const double*, int, int, AttentionHeads);

}  // namespace eth::kernels::cpu

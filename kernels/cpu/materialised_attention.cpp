// Causal self-attention that keeps every (T, T) probability matrix for backward: two whole-head
// GEMMs (Q K^T, then P V) around a row softmax. It multiplies the masked upper half too, so its
// FLOPs grow twice as fast as the blocked kernel's (kernels/cpu/flash_attention.cpp), but below
// a few hundred tokens it runs fewer, larger GEMM calls and no online rescaling; the CPU backend
// runs it where it measured faster (kernels/attention_path.hpp). It is also the float64
// reference of the attention tests.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/gpt_ops.hpp"

namespace eth::kernels::cpu {

// One (sample, head) pair per iteration; each pair's Q K^T and att V are GEMMs over strided
// views of qkv (row stride (NH + 2 NKV) hs), so the per-head arithmetic runs at GEMM speed.
template <typename F>
void materialised_attention_forward(F* out, F* att, const F* qkv, int B, int T, AttentionHeads heads) {
  const int hs = heads.hs, NH = heads.NH;
  const F scale = F(1) / std::sqrt(static_cast<F>(hs));
  const int row = static_cast<int>(heads.qkv_row()), out_row = static_cast<int>(heads.out_row());
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++) {
    for (int h = 0; h < NH; h++) {
      const F* sample = qkv + static_cast<size_t>(b) * T * row;
      const F* q = sample + heads.q(h);
      const F* k = sample + heads.k(heads.kv_head(h));
      const F* v = sample + heads.v(heads.kv_head(h));
      F* a = att + (static_cast<size_t>(b) * NH + h) * T * T;                    // (T, T)
      gemm(false, true, T, T, hs, scale, q, row, k, row, F(0), a, T);
      for (int t = 0; t < T; t++) {  // causal softmax of row t over keys 0..t
        F* r = a + static_cast<size_t>(t) * T;
        F maxval = r[0];
        for (int j = 1; j <= t; j++) maxval = std::max(maxval, r[j]);
        double sum = 0.0;
        for (int j = 0; j <= t; j++) {
          r[j] = std::exp(r[j] - maxval);
          sum += r[j];
        }
        const F inv = static_cast<F>(1.0 / sum);
        for (int j = 0; j <= t; j++) r[j] *= inv;
        for (int j = t + 1; j < T; j++) r[j] = F(0);
      }
      F* o = out + static_cast<size_t>(b) * T * out_row + heads.q(h);
      gemm(false, false, T, hs, T, F(1), a, T, v, row, F(0), o, out_row);
    }
  }
}

// One (sample, K/V head) per iteration: its group's query heads in order, so that dK and dV sum
// over them in one fixed order, whatever the threads.
template <typename F>
void materialised_attention_backward(F* dqkv, const F* dout, const F* qkv, const F* att, int B, int T,
                                     AttentionHeads heads) {
  const int hs = heads.hs, NH = heads.NH;
  const F scale = F(1) / std::sqrt(static_cast<F>(hs));
  const int row = static_cast<int>(heads.qkv_row()), out_row = static_cast<int>(heads.out_row());
#pragma omp parallel
  {
    std::vector<F> da(static_cast<size_t>(T) * T);  // (T, T) this thread's d(probabilities), then dS
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
      for (int g = 0; g < heads.NKV; g++) {
        const size_t sample = static_cast<size_t>(b) * T * row;
        const F* k = qkv + sample + heads.k(g);
        const F* v = qkv + sample + heads.v(g);
        F* dk = dqkv + sample + heads.k(g);
        F* dv = dqkv + sample + heads.v(g);
        for (int i = 0; i < heads.group(); i++) {
          const int h = g * heads.group() + i;
          const F first = i == 0 ? F(0) : F(1);  // the group's first head writes dK and dV, the rest add
          const F* q = qkv + sample + heads.q(h);
          F* dq = dqkv + sample + heads.q(h);
          const F* a = att + (static_cast<size_t>(b) * NH + h) * T * T;           // (T, T)
          const F* dO = dout + static_cast<size_t>(b) * T * out_row + heads.q(h);
          gemm(false, true, T, T, hs, F(1), dO, out_row, v, row, F(0), da.data(), T);  // datt = dO V^T
          gemm(true, false, T, hs, T, F(1), a, T, dO, out_row, first, dv, row);       // dV (+)= att^T dO
          for (int t = 0; t < T; t++) {  // softmax backward, in place: da becomes d(pre-softmax)
            const F* arow = a + static_cast<size_t>(t) * T;
            F* drow = da.data() + static_cast<size_t>(t) * T;
            double dot = 0.0;
            for (int j = 0; j <= t; j++) dot += static_cast<double>(arow[j]) * drow[j];
            for (int j = 0; j <= t; j++) drow[j] = static_cast<F>(arow[j] * (drow[j] - dot));
            for (int j = t + 1; j < T; j++) drow[j] = F(0);
          }
          gemm(false, false, T, hs, T, scale, da.data(), T, k, row, F(0), dq, row);  // dQ = scale dS K
          gemm(true, false, T, hs, T, scale, da.data(), T, q, row, first, dk, row);  // dK (+)= scale dS^T Q
        }
      }
    }
  }
}

template void materialised_attention_forward<float>(float*, float*, const float*, int, int, AttentionHeads);
template void materialised_attention_forward<double>(double*, double*, const double*, int, int, AttentionHeads);
template void materialised_attention_backward<float>(float*, const float*, const float*, const float*, int, int,
                                                     AttentionHeads);
template void materialised_attention_backward<double>(double*, const double*, const double*, const double*, int,
                                                      int, AttentionHeads);

}  // namespace eth::kernels::cpu

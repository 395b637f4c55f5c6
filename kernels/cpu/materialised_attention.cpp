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
// views of qkv (row stride 3C), so the per-head arithmetic runs at GEMM speed.
template <typename F>
void materialised_attention_forward(F* out, F* att, const F* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const F scale = F(1) / std::sqrt(static_cast<F>(hs));
  const size_t C3 = static_cast<size_t>(3) * C;
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++) {
    for (int h = 0; h < NH; h++) {
      const F* q = qkv + static_cast<size_t>(b) * T * C3 + static_cast<size_t>(h) * hs;
      const F* k = q + C;
      const F* v = q + 2 * static_cast<size_t>(C);
      F* a = att + (static_cast<size_t>(b) * NH + h) * T * T;                    // (T, T)
      gemm(false, true, T, T, hs, scale, q, static_cast<int>(C3), k, static_cast<int>(C3), F(0), a, T);
      for (int t = 0; t < T; t++) {  // causal softmax of row t over keys 0..t
        F* row = a + static_cast<size_t>(t) * T;
        F maxval = row[0];
        for (int j = 1; j <= t; j++) maxval = std::max(maxval, row[j]);
        double sum = 0.0;
        for (int j = 0; j <= t; j++) {
          row[j] = std::exp(row[j] - maxval);
          sum += row[j];
        }
        const F inv = static_cast<F>(1.0 / sum);
        for (int j = 0; j <= t; j++) row[j] *= inv;
        for (int j = t + 1; j < T; j++) row[j] = F(0);
      }
      F* o = out + static_cast<size_t>(b) * T * C + static_cast<size_t>(h) * hs;
      gemm(false, false, T, hs, T, F(1), a, T, v, static_cast<int>(C3), F(0), o, C);
    }
  }
}

template <typename F>
void materialised_attention_backward(F* dqkv, const F* dout, const F* qkv, const F* att, int B, int T, int C,
                                     int NH) {
  const int hs = C / NH;
  const F scale = F(1) / std::sqrt(static_cast<F>(hs));
  const int C3 = 3 * C;
#pragma omp parallel
  {
    std::vector<F> da(static_cast<size_t>(T) * T);  // (T, T) this thread's d(probabilities), then dS
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
      for (int h = 0; h < NH; h++) {
        const size_t qkv_offset = static_cast<size_t>(b) * T * C3 + static_cast<size_t>(h) * hs;
        const F* q = qkv + qkv_offset;
        const F* k = q + C;
        const F* v = q + 2 * static_cast<size_t>(C);
        F* dq = dqkv + qkv_offset;
        F* dk = dq + C;
        F* dv = dq + 2 * static_cast<size_t>(C);
        const F* a = att + (static_cast<size_t>(b) * NH + h) * T * T;           // (T, T)
        const F* dO = dout + static_cast<size_t>(b) * T * C + static_cast<size_t>(h) * hs;
        gemm(false, true, T, T, hs, F(1), dO, C, v, C3, F(0), da.data(), T);  // datt = dO V^T
        gemm(true, false, T, hs, T, F(1), a, T, dO, C, F(0), dv, C3);         // dV = att^T dO
        for (int t = 0; t < T; t++) {  // softmax backward, in place: da becomes d(pre-softmax)
          const F* arow = a + static_cast<size_t>(t) * T;
          F* drow = da.data() + static_cast<size_t>(t) * T;
          double dot = 0.0;
          for (int j = 0; j <= t; j++) dot += static_cast<double>(arow[j]) * drow[j];
          for (int j = 0; j <= t; j++) drow[j] = static_cast<F>(arow[j] * (drow[j] - dot));
          for (int j = t + 1; j < T; j++) drow[j] = F(0);
        }
        gemm(false, false, T, hs, T, scale, da.data(), T, k, C3, F(0), dq, C3);  // dQ = scale dS K
        gemm(true, false, T, hs, T, scale, da.data(), T, q, C3, F(0), dk, C3);   // dK = scale dS^T Q
      }
    }
  }
}

template void materialised_attention_forward<float>(float*, float*, const float*, int, int, int, int);
template void materialised_attention_forward<double>(double*, double*, const double*, int, int, int, int);
template void materialised_attention_backward<float>(float*, const float*, const float*, const float*, int, int,
                                                     int, int);
template void materialised_attention_backward<double>(double*, const double*, const double*, const double*, int,
                                                      int, int, int);

}  // namespace eth::kernels::cpu

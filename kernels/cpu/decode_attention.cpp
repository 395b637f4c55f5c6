// Incremental attention for generation (Backend::attention_decode): the new rows' keys and
// values go into the cache, then each new query row takes a causal softmax over the cached
// positions up to its own. Plain loops: a decoding step has one query row per head, so there is
// no GEMM to batch, and the work is a (T0 + i + 1) x hs dot-product sweep per row.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/gpt_ops.hpp"

namespace eth::kernels::cpu {

template <typename F>
void attention_decode(F* out,            // (B, Tn, NH hs)
                      F* k_cache,        // (B, NKV, Tmax, hs)
                      F* v_cache,        // (B, NKV, Tmax, hs)
                      const F* qkv_new,  // (B, Tn, (NH + 2 NKV) hs)
                      int B, int Tn, int T0, int Tmax, AttentionHeads heads) {
  const int hs = heads.hs, NH = heads.NH, NKV = heads.NKV;
  const size_t row = heads.qkv_row(), out_row = heads.out_row();
  const F scale = F(1) / std::sqrt(static_cast<F>(hs));
  // K/V head g's cache rows of sample b: (Tmax, hs).
  const auto head_rows = [&](F* cache, int b, int g) {
    return cache + (static_cast<size_t>(b) * NKV + g) * Tmax * hs;
  };
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++)
    for (int g = 0; g < NKV; g++)
      for (int i = 0; i < Tn; i++) {
        const F* r = qkv_new + (static_cast<size_t>(b) * Tn + i) * row;
        std::copy_n(r + heads.k(g), hs, head_rows(k_cache, b, g) + static_cast<size_t>(T0 + i) * hs);
        std::copy_n(r + heads.v(g), hs, head_rows(v_cache, b, g) + static_cast<size_t>(T0 + i) * hs);
      }
#pragma omp parallel
  {
    std::vector<F> scores(static_cast<size_t>(T0 + Tn));  // this thread's row of scaled scores
#pragma omp for collapse(3) schedule(static)
    for (int b = 0; b < B; b++)
      for (int h = 0; h < NH; h++)
        for (int i = 0; i < Tn; i++) {
          const F* q = qkv_new + (static_cast<size_t>(b) * Tn + i) * row + heads.q(h);  // (hs)
          const F* k = head_rows(k_cache, b, heads.kv_head(h));  // (Tmax, hs)
          const F* v = head_rows(v_cache, b, heads.kv_head(h));  // (Tmax, hs)
          const int keys = T0 + i + 1;           // positions [0, T0 + i]
          F maxval = -INFINITY;
          for (int j = 0; j < keys; j++) {
            F s = F(0);
            for (int d = 0; d < hs; d++) s += q[d] * k[static_cast<size_t>(j) * hs + d];
            scores[j] = s * scale;
            maxval = std::max(maxval, scores[j]);
          }
          double sum = 0.0;
          for (int j = 0; j < keys; j++) {
            scores[j] = std::exp(scores[j] - maxval);
            sum += scores[j];
          }
          const F inv = static_cast<F>(1.0 / sum);
          F* o = out + (static_cast<size_t>(b) * Tn + i) * out_row + heads.q(h);  // (hs)
          std::fill(o, o + hs, F(0));
          for (int j = 0; j < keys; j++) {
            const F p = scores[j] * inv;
            for (int d = 0; d < hs; d++) o[d] += p * v[static_cast<size_t>(j) * hs + d];
          }
        }
  }
}

template void attention_decode<float>(float*, float*, float*, const float*, int, int, int, int, AttentionHeads);
template void attention_decode<double>(double*, double*, double*, const double*, int, int, int, int, AttentionHeads);

}  // namespace eth::kernels::cpu

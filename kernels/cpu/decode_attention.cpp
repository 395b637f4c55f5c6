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
void attention_decode(F* out,            // (B, Tn, C)
                      F* k_cache,        // (B, NH, Tmax, hs)
                      F* v_cache,        // (B, NH, Tmax, hs)
                      const F* qkv_new,  // (B, Tn, 3C)
                      int B, int Tn, int T0, int Tmax, int C, int NH) {
  const int hs = C / NH;
  const size_t C3 = static_cast<size_t>(3) * C;
  const F scale = F(1) / std::sqrt(static_cast<F>(hs));
  // The head's cache rows of sample b: (Tmax, hs).
  const auto head_rows = [&](F* cache, int b, int h) {
    return cache + (static_cast<size_t>(b) * NH + h) * Tmax * hs;
  };
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++)
      for (int i = 0; i < Tn; i++) {
        const F* row = qkv_new + (static_cast<size_t>(b) * Tn + i) * C3 + static_cast<size_t>(h) * hs;
        std::copy(row + C, row + C + hs, head_rows(k_cache, b, h) + static_cast<size_t>(T0 + i) * hs);
        std::copy(row + 2 * C, row + 2 * C + hs, head_rows(v_cache, b, h) + static_cast<size_t>(T0 + i) * hs);
      }
#pragma omp parallel
  {
    std::vector<F> scores(static_cast<size_t>(T0 + Tn));  // this thread's row of scaled scores
#pragma omp for collapse(3) schedule(static)
    for (int b = 0; b < B; b++)
      for (int h = 0; h < NH; h++)
        for (int i = 0; i < Tn; i++) {
          const F* q = qkv_new + (static_cast<size_t>(b) * Tn + i) * C3 + static_cast<size_t>(h) * hs;  // (hs)
          const F* k = head_rows(k_cache, b, h);  // (Tmax, hs)
          const F* v = head_rows(v_cache, b, h);  // (Tmax, hs)
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
          F* o = out + (static_cast<size_t>(b) * Tn + i) * C + static_cast<size_t>(h) * hs;  // (hs)
          std::fill(o, o + hs, F(0));
          for (int j = 0; j < keys; j++) {
            const F p = scores[j] * inv;
            for (int d = 0; d < hs; d++) o[d] += p * v[static_cast<size_t>(j) * hs + d];
          }
        }
  }
}

template void attention_decode<float>(float*, float*, float*, const float*, int, int, int, int, int, int);
template void attention_decode<double>(double*, double*, double*, const double*, int, int, int, int, int, int);

}  // namespace eth::kernels::cpu

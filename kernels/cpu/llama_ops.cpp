#include "kernels/cpu/llama_ops.hpp"

#include <omp.h>

#include <cmath>
#include <vector>

namespace eth::kernels::cpu {
namespace {

// The rotation of one head's halves x1 = x[0, hs/2), x2 = x[hs/2, hs) by the angles of one
// position; `sign` +1 rotates forward, -1 applies the transpose (backward).
template <typename F>
void rotate_head(F* x, const float* cos_row, const float* sin_row, int half, F sign) {
  for (int i = 0; i < half; i++) {
    const F c = static_cast<F>(cos_row[i]), s = sign * static_cast<F>(sin_row[i]);
    const F x1 = x[i], x2 = x[i + half];
    x[i] = x1 * c - x2 * s;
    x[i + half] = x2 * c + x1 * s;
  }
}

template <typename F>
void rotary(F* qkv, const float* inv_freq, int B, int T, int T0, int NH, int NKV, int hs, F sign) {
  const int half = hs / 2, heads = NH + NKV;  // q's heads, then k's, lie first in each row
  const size_t row = static_cast<size_t>(NH + 2 * NKV) * hs;
#pragma omp parallel
  {
    std::vector<float> cos_row(static_cast<size_t>(half)), sin_row(static_cast<size_t>(half));
#pragma omp for schedule(static)
    for (int t = 0; t < T; t++) {
      for (int i = 0; i < half; i++) {
        const float angle = static_cast<float>(T0 + t) * inv_freq[i];  // fp32, as transformers computes it
        cos_row[i] = std::cos(angle);
        sin_row[i] = std::sin(angle);
      }
      for (int b = 0; b < B; b++) {
        F* x = qkv + (static_cast<size_t>(b) * T + t) * row;
        for (int h = 0; h < heads; h++)
          rotate_head(x + static_cast<size_t>(h) * hs, cos_row.data(), sin_row.data(), half, sign);
      }
    }
  }
}

}  // namespace

template <typename F>
void rmsnorm_forward(F* out, F* rstd, const F* inp, const F* weight, int N, int C, double eps) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const F* x = inp + static_cast<size_t>(n) * C;
    double squares = 0.0;
    for (int c = 0; c < C; c++) squares += static_cast<double>(x[c]) * x[c];
    const double s = 1.0 / std::sqrt(squares / C + eps);
    F* o = out + static_cast<size_t>(n) * C;
    for (int c = 0; c < C; c++) o[c] = static_cast<F>(x[c] * s) * weight[c];
    rstd[n] = static_cast<F>(s);
  }
}

template <typename F>
void rmsnorm_backward(F* dinp, F* dweight, const F* dout, const F* inp, const F* weight, const F* rstd, int N,
                      int C) {
#pragma omp parallel
  {
    // dinp: rows are independent. With norm = x rstd and dnorm = weight dout,
    // dx = rstd (dnorm - norm mean(dnorm norm)).
#pragma omp for schedule(static)
    for (int n = 0; n < N; n++) {
      const F* x = inp + static_cast<size_t>(n) * C;
      const F* d = dout + static_cast<size_t>(n) * C;
      const double r = rstd[n];
      double dnorm_norm_mean = 0.0;
      for (int c = 0; c < C; c++) dnorm_norm_mean += static_cast<double>(weight[c]) * d[c] * (x[c] * r);
      dnorm_norm_mean /= C;
      F* dx = dinp + static_cast<size_t>(n) * C;
      for (int c = 0; c < C; c++)
        dx[c] += static_cast<F>((static_cast<double>(weight[c]) * d[c] - x[c] * r * dnorm_norm_mean) * r);
    }
    // dweight sums over rows: each thread owns a range of channels, rows in order.
    const size_t threads = static_cast<size_t>(omp_get_num_threads()), id = static_cast<size_t>(omp_get_thread_num());
    const size_t begin = C * id / threads, end = C * (id + 1) / threads;
    for (int n = 0; n < N; n++) {
      const F* x = inp + static_cast<size_t>(n) * C;
      const F* d = dout + static_cast<size_t>(n) * C;
      for (size_t c = begin; c < end; c++) dweight[c] += x[c] * rstd[n] * d[c];
    }
  }
}

template <typename F>
void rotary_forward(F* qkv, const float* inv_freq, int B, int T, int T0, int NH, int NKV, int hs) {
  rotary(qkv, inv_freq, B, T, T0, NH, NKV, hs, F(1));
}

template <typename F>
void rotary_backward(F* dqkv, const float* inv_freq, int B, int T, int T0, int NH, int NKV, int hs) {
  rotary(dqkv, inv_freq, B, T, T0, NH, NKV, hs, F(-1));
}

template <typename F>
void swiglu_forward(F* out, const F* inp, int N, int FC) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const F* gate = inp + static_cast<size_t>(n) * 2 * FC;
    const F* up = gate + FC;
    F* o = out + static_cast<size_t>(n) * FC;
    for (int j = 0; j < FC; j++) o[j] = gate[j] / (F(1) + std::exp(-gate[j])) * up[j];
  }
}

template <typename F>
void swiglu_backward(F* dinp, const F* inp, const F* dout, int N, int FC) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const F* gate = inp + static_cast<size_t>(n) * 2 * FC;
    const F* up = gate + FC;
    const F* d = dout + static_cast<size_t>(n) * FC;
    F* dgate = dinp + static_cast<size_t>(n) * 2 * FC;
    F* dup = dgate + FC;
    for (int j = 0; j < FC; j++) {
      const F g = gate[j], sigmoid = F(1) / (F(1) + std::exp(-g));
      dup[j] = d[j] * g * sigmoid;                                   // silu(g)
      dgate[j] = d[j] * up[j] * sigmoid * (F(1) + g * (F(1) - sigmoid));  // silu'(g)
    }
  }
}

#define ETH_INSTANTIATE(F)                                                                              \
  template void rmsnorm_forward<F>(F*, F*, const F*, const F*, int, int, double);                      \
  template void rmsnorm_backward<F>(F*, F*, const F*, const F*, const F*, const F*, int, int);         \
  template void rotary_forward<F>(F*, const float*, int, int, int, int, int, int);                     \
  template void rotary_backward<F>(F*, const float*, int, int, int, int, int, int);                    \
  template void swiglu_forward<F>(F*, const F*, int, int);                                             \
  template void swiglu_backward<F>(F*, const F*, const F*, int, int);
ETH_INSTANTIATE(float)
ETH_INSTANTIATE(double)
#undef ETH_INSTANTIATE

}  // namespace eth::kernels::cpu

#include "kernels/cpu/gpt_ops.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/ordered_gemm.hpp"

namespace eth::kernels::cpu {
namespace {

// [begin, end) of `n` items owned by the calling thread of the current parallel region.
struct Range { size_t begin, end; };
Range thread_share(size_t n) {
  const size_t threads = static_cast<size_t>(omp_get_num_threads());
  const size_t id = static_cast<size_t>(omp_get_thread_num());
  return {n * id / threads, n * (id + 1) / threads};
}

constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kLayerNormEps = 1e-5;

}  // namespace

template <typename F>
void encoder_forward(F* out, const int32_t* tokens, const F* wte, const F* wpe, int B, int T, int C) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      F* o = out + (static_cast<size_t>(b) * T + t) * C;
      const F* e = wte + static_cast<size_t>(tokens[b * T + t]) * C;
      if (wpe == nullptr) {  // rotary positions: the word rows alone
        for (int c = 0; c < C; c++) o[c] = e[c];
        continue;
      }
      const F* p = wpe + static_cast<size_t>(t) * C;
      for (int c = 0; c < C; c++) o[c] = e[c] + p[c];
    }
  }
}

template <typename F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const int32_t* tokens, int B, int T, int C) {
  // A token may repeat within the batch, so threads split the channels, not the rows: every
  // thread adds into its own columns in the same row order, deterministic and race-free.
#pragma omp parallel
  {
    const Range cols = thread_share(static_cast<size_t>(C));
    for (int b = 0; b < B; b++) {
      for (int t = 0; t < T; t++) {
        const F* d = dout + (static_cast<size_t>(b) * T + t) * C;
        if (dwte) {
          F* de = dwte + static_cast<size_t>(tokens[b * T + t]) * C;
          for (size_t c = cols.begin; c < cols.end; c++) de[c] += d[c];
        }
        if (dwpe) {
          F* dp = dwpe + static_cast<size_t>(t) * C;
          for (size_t c = cols.begin; c < cols.end; c++) dp[c] += d[c];
        }
      }
    }
  }
}

template <typename F>
void layernorm_forward(F* out, F* mean, F* rstd, const F* inp, const F* weight, const F* bias,
                       int N, int C) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const F* x = inp + static_cast<size_t>(n) * C;
    double sum = 0.0;
    for (int c = 0; c < C; c++) sum += x[c];
    const double m = sum / C;
    double var = 0.0;
    for (int c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
    const double s = 1.0 / std::sqrt(var / C + kLayerNormEps);
    F* o = out + static_cast<size_t>(n) * C;
    for (int c = 0; c < C; c++) o[c] = static_cast<F>((x[c] - m) * s) * weight[c] + bias[c];
    mean[n] = static_cast<F>(m);
    rstd[n] = static_cast<F>(s);
  }
}

template <typename F>
void layernorm_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp,
                        const F* weight, const F* mean, const F* rstd, int N, int C) {
#pragma omp parallel
  {
    // Rows are independent for dinp.
#pragma omp for schedule(static)
    for (int n = 0; n < N; n++) {
      const F* x = inp + static_cast<size_t>(n) * C;
      const F* d = dout + static_cast<size_t>(n) * C;
      double dnorm_mean = 0.0, dnorm_norm_mean = 0.0;
      for (int c = 0; c < C; c++) {
        const double norm = (x[c] - mean[n]) * static_cast<double>(rstd[n]);
        const double dnorm = static_cast<double>(weight[c]) * d[c];
        dnorm_mean += dnorm;
        dnorm_norm_mean += dnorm * norm;
      }
      dnorm_mean /= C;
      dnorm_norm_mean /= C;
      F* dx = dinp + static_cast<size_t>(n) * C;
      for (int c = 0; c < C; c++) {
        const double norm = (x[c] - mean[n]) * static_cast<double>(rstd[n]);
        const double dnorm = static_cast<double>(weight[c]) * d[c];
        dx[c] += static_cast<F>((dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd[n]);
      }
    }
    // dweight and dbias sum over rows: each thread owns a range of channels.
    const Range cols = thread_share(static_cast<size_t>(C));
    for (int n = 0; n < N; n++) {
      const F* x = inp + static_cast<size_t>(n) * C;
      const F* d = dout + static_cast<size_t>(n) * C;
      for (size_t c = cols.begin; c < cols.end; c++) {
        dweight[c] += (x[c] - mean[n]) * rstd[n] * d[c];
        dbias[c] += d[c];
      }
    }
  }
}

template <typename F>
void matmul_forward(F* out, const F* inp, const F* weight, const F* bias, int N, int C, int OC) {
  // Each row's outputs are the same bits whatever N (kernels/cpu/ordered_gemm.hpp). Generation's
  // one new position a step reads the weights once instead, through gemv.
  if (N == 1) gemv(OC, C, weight, inp, out);  // (OC, C) @ (C)
  else ordered_gemm(false, true, N, OC, C, inp, C, weight, C, false, out, OC);
  if (bias == nullptr) return;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    F* o = out + static_cast<size_t>(n) * OC;
    for (int j = 0; j < OC; j++) o[j] += bias[j];
  }
}

template <typename F>
void matmul_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp, const F* weight,
                     int N, int C, int OC) {
  // One summation order (kernels/cpu/ordered_gemm.hpp): dW's chains go on from one micro-batch to
  // the next, so a step's weight gradients do not depend on how its samples are split.
  ordered_gemm(false, false, N, C, OC, dout, OC, weight, C, false, dinp, C);  // dinp = dout @ W
  ordered_gemm(true, false, OC, C, N, dout, OC, inp, C, true, dweight, C);    // dW += dout^T @ inp
  if (dbias == nullptr) return;
#pragma omp parallel
  {
    const Range cols = thread_share(static_cast<size_t>(OC));
    for (int n = 0; n < N; n++) {
      const F* d = dout + static_cast<size_t>(n) * OC;
      for (size_t j = cols.begin; j < cols.end; j++) dbias[j] += d[j];
    }
  }
}

template <typename F>
void gelu_forward(F* out, const F* inp, size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) {
    const F x = inp[i];
    out[i] = F(0.5) * x * (F(1) + std::tanh(F(kGeluScale) * (x + F(0.044715) * x * x * x)));
  }
}

template <typename F>
void gelu_backward(F* dinp, const F* inp, const F* dout, size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) {
    const F x = inp[i];
    const F th = std::tanh(F(kGeluScale) * (x + F(0.044715) * x * x * x));
    const F sech2 = F(1) - th * th;
    const F local = F(0.5) * (F(1) + th) +
                    F(0.5) * x * sech2 * F(kGeluScale) * (F(1) + F(3 * 0.044715) * x * x);
    dinp[i] = local * dout[i];
  }
}

template <typename F>
void residual_forward(F* out, const F* a, const F* b, size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

template <typename F>
void crossentropy_forward_backward(F* sample_losses, F* logits, const int32_t* targets,
                                   int B, int T, int V, int Vp, F dlogits_scale) {
  const int N = B * T;
  std::vector<double> token_loss(static_cast<size_t>(N));
  const bool want_grad = dlogits_scale != F(0);
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    F* row = logits + static_cast<size_t>(n) * Vp;
    F maxval = row[0];
    for (int v = 1; v < V; v++) maxval = std::max(maxval, row[v]);
    const F target_logit = row[targets[n]];
    double sum = 0.0;
    for (int v = 0; v < V; v++) {
      const F e = std::exp(row[v] - maxval);
      sum += e;
      if (want_grad) row[v] = e;  // keep exp for the gradient pass below
    }
    token_loss[static_cast<size_t>(n)] = std::log(sum) - static_cast<double>(target_logit - maxval);
    if (!want_grad) continue;
    const F g = dlogits_scale / static_cast<F>(T);
    const F inv_sum = static_cast<F>(1.0 / sum);
    for (int v = 0; v < V; v++) row[v] = g * row[v] * inv_sum;
    row[targets[n]] -= g;
    for (int v = V; v < Vp; v++) row[v] = F(0);
  }
  for (int b = 0; b < B; b++) {
    double s = 0.0;
    for (int t = 0; t < T; t++) s += token_loss[static_cast<size_t>(b) * T + t];
    sample_losses[b] = static_cast<F>(s / T);
  }
}

template <typename F>
double sum_of_squares(const F* x, size_t n) {
  double s = 0.0;
#pragma omp parallel for reduction(+ : s) schedule(static)
  for (size_t i = 0; i < n; i++) s += static_cast<double>(x[i]) * x[i];
  return s;
}

template <typename F, typename E>
void adamw_update(F* params, E* param_copies, const F* grads, F* m, F* v, const AdamWSegment* segments,
                  size_t count, F lr, F beta1, F beta2, F eps, F weight_decay, F grad_scale, int step) {
  const F correction1 = F(1) - static_cast<F>(std::pow(static_cast<double>(beta1), step));
  const F correction2 = F(1) - static_cast<F>(std::pow(static_cast<double>(beta2), step));
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < count; k++) {
    const AdamWSegment& s = segments[k];
    const F decay = s.decay ? weight_decay : F(0);
    for (size_t j = 0; j < s.size; j++) {
      const size_t i = s.param_offset + j, mi = s.moment_offset + j;
      const F g = grads[i] * grad_scale;
      m[mi] = beta1 * m[mi] + (F(1) - beta1) * g;
      v[mi] = beta2 * v[mi] + (F(1) - beta2) * g * g;
      const F m_hat = m[mi] / correction1;
      const F v_hat = v[mi] / correction2;
      params[i] -= lr * (m_hat / (std::sqrt(v_hat) + eps) + decay * params[i]);
      if constexpr (!std::is_same_v<E, F>)
        if (param_copies != nullptr) param_copies[i] = stored<E>(static_cast<float>(params[i]));
    }
  }
}

#define ETH_INSTANTIATE(F)                                                                       \
  template void encoder_forward<F>(F*, const int32_t*, const F*, const F*, int, int, int);       \
  template void encoder_backward<F>(F*, F*, const F*, const int32_t*, int, int, int);            \
  template void layernorm_forward<F>(F*, F*, F*, const F*, const F*, const F*, int, int);        \
  template void layernorm_backward<F>(F*, F*, F*, const F*, const F*, const F*, const F*,        \
                                      const F*, int, int);                                       \
  template void matmul_forward<F>(F*, const F*, const F*, const F*, int, int, int);              \
  template void matmul_backward<F>(F*, F*, F*, const F*, const F*, const F*, int, int, int);     \
  template void gelu_forward<F>(F*, const F*, size_t);                                           \
  template void gelu_backward<F>(F*, const F*, const F*, size_t);                                \
  template void residual_forward<F>(F*, const F*, const F*, size_t);                             \
  template void crossentropy_forward_backward<F>(F*, F*, const int32_t*, int, int, int, int, F); \
  template double sum_of_squares<F>(const F*, size_t);                                           \
  template void adamw_update<F, F>(F*, F*, const F*, F*, F*, const AdamWSegment*, size_t, F, F, F, F, F, F, int);

ETH_INSTANTIATE(float)
ETH_INSTANTIATE(double)
template void adamw_update<float, bf16>(float*, bf16*, const float*, float*, float*, const AdamWSegment*, size_t, float,
                                        float, float, float, float, float, int);
template void adamw_update<float, fp16>(float*, fp16*, const float*, float*, float*, const AdamWSegment*, size_t, float,
                                        float, float, float, float, float, int);
#undef ETH_INSTANTIATE

}  // namespace eth::kernels::cpu

// The cases of kernels16.hpp, written once over the Launch that runs them and the Memory its
// buffers live in (Memory: put(host vector) -> device copy, filled(n, value) -> device buffer,
// get(device, n) -> values widened to double). Shapes are GPT-2's widths at short T (the
// interpreter runs every thread as a fiber), none a multiple of the kernels' tiles in rows.
// Every case runs at E = bf16, then at E = fp16. Inputs are O(1) random values, rounded to E where
// stored so; outputs start as NaN, and accumulated outputs as random non-zero values.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/bf16.hpp"
#include "kernels/fp16.hpp"
#include "kernels/gpu_ops/ops.hpp"
#include "kernels/simt/types.hpp"
#include "lib/base/random.hpp"
#include "tests/gpu/kernels16.hpp"

namespace eth::test::bf16_kernels {

using kernels::bf16;
using kernels::fp16;

inline std::vector<float> uniforms(size_t n, uint64_t stream, float scale, float offset = 0.f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = offset + scale * static_cast<float>(2 * uniform_at(stream, i) - 1);
  return v;
}
template <class E>
std::vector<E> randoms(size_t n, uint64_t stream, float scale, float offset = 0.f) {
  const std::vector<float> f = uniforms(n, stream, scale, offset);
  std::vector<E> v(n);
  for (size_t i = 0; i < n; i++) v[i] = kernels::simt::from_float<E>(f[i]);
  return v;
}

template <typename T>
double widen(T x) {
  return kernels::simt::to_float(x);
}
// n values in host memory, widened to double.
template <typename T>
std::vector<double> widened(const T* host, size_t n) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; i++) v[i] = widen(host[i]);
  return v;
}

// The cases at E, each output named with E first.
template <class E, class Launch, class Memory>
void run_cases(Launch& launch, Memory& mem, std::vector<Output>& outputs) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const E e_nan = kernels::simt::from_float<E>(nan);
  auto keep = [&](const std::string& name, auto* device, size_t n) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(device)>>;
    outputs.push_back({std::string(kernels::simt::named<E>("", "bf16 ", "fp16 ")) + name,
                       kernels::simt::named<T>("fp32", "bf16", "fp16"), mem.get(device, n)});
  };

  // Flash attention, both head sizes and grouped-query heads: forward, then backward from
  // forward's out and lse.
  struct AttentionShape { int B, T; kernels::AttentionHeads heads; };
  for (const AttentionShape s : {AttentionShape{2, 200, {12, 12, 64}}, AttentionShape{1, 333, {4, 4, 128}},
                                 AttentionShape{2, 200, {12, 4, 64}}}) {
    const size_t BTC = size_t(s.B) * s.T * s.heads.out_row(), lse_n = size_t(s.B) * s.heads.NH * s.T;
    const size_t qkv_n = size_t(s.B) * s.T * s.heads.qkv_row();
    std::string tag = "attention hs " + std::to_string(s.heads.hs);
    if (s.heads.NKV != s.heads.NH) tag += " NKV " + std::to_string(s.heads.NKV);
    tag += ": ";
    const E* qkv = mem.put(randoms<E>(qkv_n, 1, 1.f));
    const E* dout = mem.put(randoms<E>(BTC, 2, 1.f));
    E* out = mem.filled(BTC, e_nan);
    float* lse = mem.filled(lse_n, nan);
    E* dqkv = mem.filled(qkv_n, e_nan);
    kernels::gpu_ops::attention_forward16(launch, out, lse, qkv, s.B, s.T, s.heads);
    kernels::gpu_ops::attention_backward16(launch, dqkv, dout, qkv, out, lse, s.B, s.T, s.heads);
    keep(tag + "out", out, BTC);
    keep(tag + "lse", lse, lse_n);
    keep(tag + "dqkv", dqkv, qkv_n);
  }

  // The MLP (N = 2 x 100 rows): fc with GELU in its epilogue, then fc_proj's backward with dGELU
  // in its dinp GEMM's epilogue: the gradient of pre_gelu. The backward reads inputs of its own,
  // not the forward's outputs: those differ between the sides where an fp32 value straddles a
  // rounding boundary of E (and by GELU's formula), and fed on they would add those differences
  // to the fp32 sums that the backward's bound is about.
  {
    const int N = 200, C = 768, H = 4 * C;
    const E* inp = mem.put(randoms<E>(size_t(N) * C, 3, 1.f));
    const E* fc_w = mem.put(randoms<E>(size_t(H) * C, 4, 0.06f));
    const E* fc_b = mem.put(randoms<E>(size_t(H), 5, 0.5f));
    const E* proj_w = mem.put(randoms<E>(size_t(C) * H, 6, 0.03f));
    const std::vector<E> dout_h = randoms<E>(size_t(N) * C, 7, 1.f), act = randoms<E>(size_t(N) * H, 41, 1.f);
    const E* dout = mem.put(dout_h);
    const E* act_d = mem.put(act);
    const E* pre = mem.put(randoms<E>(size_t(N) * H, 42, 2.f));
    E* out = mem.filled(size_t(N) * H, e_nan);
    E* pre_gelu = mem.filled(size_t(N) * H, e_nan);
    E* dpre_gelu = mem.filled(size_t(N) * H, e_nan);
    const std::vector<float> dweight0 = uniforms(size_t(C) * H, 8, 1.f), dbias0 = uniforms(size_t(C), 40, 1.f);
    float* dweight = mem.put(dweight0);
    float* dbias = mem.put(dbias0);
    kernels::gpu_ops::matmul_forward16(launch, out, pre_gelu, inp, fc_w, fc_b, N, C, H);
    kernels::gpu_ops::matmul_backward16(launch, dpre_gelu, dweight, dbias, dout, act_d, proj_w, pre, N, H, C);
    keep("matmul + GELU: out", out, size_t(N) * H);
    keep("matmul + GELU: pre_gelu", pre_gelu, size_t(N) * H);
    keep("matmul + dGELU: dpre_gelu", dpre_gelu, size_t(N) * H);
    // dweight (C, H) += dout^T act and dbias (C) += the column sums of dout, over the N rows.
    keep("matmul + dGELU: dweight", dweight, size_t(C) * H);
    outputs.back().terms = N + 1;
    outputs.back().magnitude.assign(dweight0.begin(), dweight0.end());
    for (double& m : outputs.back().magnitude) m = std::fabs(m);
    for (int n = 0; n < N; n++)
      for (int c = 0; c < C; c++)
        for (int h = 0; h < H; h++)
          outputs.back().magnitude[size_t(c) * H + h] +=
              std::fabs(widen(dout_h[size_t(n) * C + c]) * widen(act[size_t(n) * H + h]));
    keep("matmul + dGELU: dbias", dbias, size_t(C));
    outputs.back().terms = N + 1;
    for (int c = 0; c < C; c++) {
      double m = std::fabs(dbias0[size_t(c)]);
      for (int n = 0; n < N; n++) m += std::fabs(widen(dout_h[size_t(n) * C + c]));
      outputs.back().magnitude.push_back(m);
    }
  }

  // Residual + layernorm forward, layernorm backward (the rows' launch, then the column sums of its partials).
  {
    const int N = 200, C = 768;
    const size_t NC = size_t(N) * C;
    const E* a = mem.put(randoms<E>(NC, 9, 1.f));
    const E* b = mem.put(randoms<E>(NC, 10, 1.f));
    const E* weight = mem.put(randoms<E>(size_t(C), 11, 0.5f, 1.f));
    const E* bias = mem.put(randoms<E>(size_t(C), 12, 0.3f));
    const E* dout = mem.put(randoms<E>(NC, 13, 1.f));
    E* residual = mem.filled(NC, e_nan);
    E* out = mem.filled(NC, e_nan);
    float* mean = mem.filled(size_t(N), nan);
    float* rstd = mem.filled(size_t(N), nan);
    E* dinp = mem.put(randoms<E>(NC, 14, 1.f));
    float* dweight = mem.put(uniforms(size_t(C), 15, 1.f));
    float* dbias = mem.put(uniforms(size_t(C), 16, 1.f));
    kernels::gpu_ops::fused_residual_layernorm_forward16(launch, residual, out, mean, rstd, a, b, weight, bias, N, C);
    kernels::gpu_ops::layernorm_backward16(launch, dinp, dweight, dbias, dout, residual, weight, mean, rstd, N, C);
    keep("layernorm: residual", residual, NC);
    keep("layernorm: out", out, NC);
    keep("layernorm: mean", mean, size_t(N));
    keep("layernorm: rstd", rstd, size_t(N));
    keep("layernorm: dinp", dinp, NC);
    keep("layernorm: dweight", dweight, size_t(C));
    keep("layernorm: dbias", dbias, size_t(C));
  }

  // The classifier over GPT-2's vocabulary, in two chunks of rows, then the per-sample means.
  {
    const int B = 2, T = 100, V = 50257, Vp = 50304, N = B * T, first = 120;
    const size_t NV = size_t(N) * Vp;
    std::vector<int32_t> host_targets(static_cast<size_t>(N));
    for (size_t i = 0; i < host_targets.size(); i++) host_targets[i] = static_cast<int32_t>(mix64(17 + i) % V);
    const int32_t* targets = mem.put(host_targets);
    E* logits = mem.put(randoms<E>(NV, 18, 4.f));
    float* token_losses = mem.filled(size_t(N), nan);
    float* sample_losses = mem.filled(size_t(B), nan);
    // fp16 with a loss scale of 2^12, as its path trains: unscaled, most dlogits (~1e-7) would be
    // fp16 subnormals, whose few significant bits no relative bound suits.
    const float scale = (std::is_same_v<E, fp16> ? 4096.f : 1.f) / T;
    kernels::gpu_ops::classifier_rows16(launch, token_losses, logits, targets, first, V, Vp, scale);
    kernels::gpu_ops::classifier_rows16(launch, token_losses + first, logits + size_t(first) * Vp, targets + first,
                                        N - first, V, Vp, scale);
    kernels::gpu_ops::sample_mean_losses(launch, sample_losses, token_losses, B, T);
    keep("classifier: token losses", token_losses, size_t(N));
    keep("classifier: sample losses", sample_losses, size_t(B));
    keep("classifier: dlogits", logits, NV);
  }

  // AdamW over one flat buffer in one launch, writing the copies in E (step 3's bias corrections).
  {
    const size_t n = size_t(1) << 20;
    std::vector<kernels::AdamWSegment> table;
    kernels::append_adamw_segments(table, 0, 0, n, true);
    const kernels::AdamWSegment* segments = mem.put(table);
    float* params = mem.put(uniforms(n, 19, 1.f));
    const float* grads = mem.put(uniforms(n, 20, 1.f));
    float* m = mem.put(uniforms(n, 21, 0.1f));
    float* v = mem.put(uniforms(n, 22, 0.01f, 0.011f));  // positive
    E* copies = mem.filled(n, e_nan);
    const float beta1 = 0.9f, beta2 = 0.95f;
    kernels::gpu_ops::adamw_update(launch, params, copies, grads, m, v, segments, table.size(),
                                   {6e-4f, beta1, beta2, 1e-8f, 0.1f, 0.5f, 1.f - beta1 * beta1 * beta1,
                                    1.f - beta2 * beta2 * beta2});
    keep("adamw: params", params, n);
    keep("adamw: m", m, n);
    keep("adamw: v", v, n);
    keep("adamw: copies", copies, n);
  }
}

template <class Launch, class Memory>
std::vector<Output> run_cases(Launch& launch, Memory& mem) {
  std::vector<Output> outputs;
  run_cases<bf16>(launch, mem, outputs);
  run_cases<fp16>(launch, mem, outputs);
  return outputs;
}

}  // namespace eth::test::bf16_kernels

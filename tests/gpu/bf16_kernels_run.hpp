// The cases of bf16_kernels.hpp, written once over the Launch that runs them and the Memory its
// buffers live in (Memory: put(host vector) -> device copy, filled(n, value) -> device buffer,
// get(device, n) -> values widened to double). Shapes are GPT-2's widths at short T (the
// interpreter runs every thread as a fiber), none a multiple of the kernels' tiles in rows.
// Inputs are O(1) random values, rounded to bf16 where stored so; outputs start as NaN, and
// accumulated outputs as random non-zero values.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/bf16.hpp"
#include "kernels/gpu_ops/ops.hpp"
#include "kernels/simt/types.hpp"
#include "lib/base/random.hpp"
#include "tests/gpu/bf16_kernels.hpp"

namespace eth::test::bf16_kernels {

using kernels::bf16;

inline std::vector<float> uniforms(size_t n, uint64_t stream, float scale, float offset = 0.f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = offset + scale * static_cast<float>(2 * uniform_at(stream, i) - 1);
  return v;
}
inline std::vector<bf16> bf16s(size_t n, uint64_t stream, float scale, float offset = 0.f) {
  const std::vector<float> f = uniforms(n, stream, scale, offset);
  std::vector<bf16> v(n);
  for (size_t i = 0; i < n; i++) v[i] = kernels::simt::to_bf16(f[i]);
  return v;
}

inline double widen(bf16 x) { return kernels::simt::to_float(x); }
inline double widen(float x) { return x; }
// n values in host memory, widened to double.
template <typename T>
std::vector<double> widened(const T* host, size_t n) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; i++) v[i] = widen(host[i]);
  return v;
}

template <class Launch, class Memory>
std::vector<Output> run_cases(Launch& launch, Memory& mem) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const bf16 bf16_nan = kernels::simt::to_bf16(nan);
  std::vector<Output> outputs;
  auto keep = [&](const std::string& name, auto* device, size_t n) {
    outputs.push_back({name, sizeof(*device) == 2, mem.get(device, n)});
  };

  // Flash attention, both head sizes: forward, then backward from forward's out and lse.
  struct AttentionShape { int B, T, C, NH; };
  for (const AttentionShape s : {AttentionShape{2, 200, 768, 12}, AttentionShape{1, 333, 512, 4}}) {
    const size_t BTC = size_t(s.B) * s.T * s.C, lse_n = size_t(s.B) * s.NH * s.T;
    const std::string tag = "attention hs " + std::to_string(s.C / s.NH) + ": ";
    const bf16* qkv = mem.put(bf16s(3 * BTC, 1, 1.f));
    const bf16* dout = mem.put(bf16s(BTC, 2, 1.f));
    bf16* out = mem.filled(BTC, bf16_nan);
    float* lse = mem.filled(lse_n, nan);
    bf16* dqkv = mem.filled(3 * BTC, bf16_nan);
    kernels::gpu_ops::attention_forward_bf16(launch, out, lse, qkv, s.B, s.T, s.C, s.NH);
    kernels::gpu_ops::attention_backward_bf16(launch, dqkv, dout, qkv, out, lse, s.B, s.T, s.C, s.NH);
    keep(tag + "out", out, BTC);
    keep(tag + "lse", lse, lse_n);
    keep(tag + "dqkv", dqkv, 3 * BTC);
  }

  // The MLP (N = 2 x 100 rows): fc with GELU in its epilogue, then fc_proj's backward with dGELU
  // in its dinp GEMM's epilogue, on fc's pre-activation: the gradient of pre_gelu.
  {
    const int N = 200, C = 768, H = 4 * C;
    const bf16* inp = mem.put(bf16s(size_t(N) * C, 3, 1.f));
    const bf16* fc_w = mem.put(bf16s(size_t(H) * C, 4, 0.06f));
    const bf16* fc_b = mem.put(bf16s(size_t(H), 5, 0.5f));
    const bf16* proj_w = mem.put(bf16s(size_t(C) * H, 6, 0.03f));
    const bf16* dout = mem.put(bf16s(size_t(N) * C, 7, 1.f));
    bf16* out = mem.filled(size_t(N) * H, bf16_nan);
    bf16* pre_gelu = mem.filled(size_t(N) * H, bf16_nan);
    bf16* dpre_gelu = mem.filled(size_t(N) * H, bf16_nan);
    float* dweight = mem.put(uniforms(size_t(C) * H, 8, 1.f));
    float* dbias = mem.put(uniforms(size_t(C), 40, 1.f));
    kernels::gpu_ops::matmul_forward16(launch, out, pre_gelu, inp, fc_w, fc_b, N, C, H);
    kernels::gpu_ops::matmul_backward16(launch, dpre_gelu, dweight, dbias, dout, out, proj_w, pre_gelu, N, H, C);
    keep("matmul + GELU: out", out, size_t(N) * H);
    keep("matmul + GELU: pre_gelu", pre_gelu, size_t(N) * H);
    keep("matmul + dGELU: dpre_gelu", dpre_gelu, size_t(N) * H);
    keep("matmul + dGELU: dweight", dweight, size_t(C) * H);
    keep("matmul + dGELU: dbias", dbias, size_t(C));
  }

  // Residual + layernorm forward, layernorm backward (one launch, the last block's column sums).
  {
    const int N = 200, C = 768;
    const size_t NC = size_t(N) * C;
    const bf16* a = mem.put(bf16s(NC, 9, 1.f));
    const bf16* b = mem.put(bf16s(NC, 10, 1.f));
    const bf16* weight = mem.put(bf16s(size_t(C), 11, 0.5f, 1.f));
    const bf16* bias = mem.put(bf16s(size_t(C), 12, 0.3f));
    const bf16* dout = mem.put(bf16s(NC, 13, 1.f));
    bf16* residual = mem.filled(NC, bf16_nan);
    bf16* out = mem.filled(NC, bf16_nan);
    float* mean = mem.filled(size_t(N), nan);
    float* rstd = mem.filled(size_t(N), nan);
    bf16* dinp = mem.put(bf16s(NC, 14, 1.f));
    float* dweight = mem.put(uniforms(size_t(C), 15, 1.f));
    float* dbias = mem.put(uniforms(size_t(C), 16, 1.f));
    kernels::gpu_ops::fused_residual_layernorm_forward_bf16(launch, residual, out, mean, rstd, a, b, weight, bias, N, C);
    kernels::gpu_ops::layernorm_backward_bf16(launch, dinp, dweight, dbias, dout, residual, weight, mean, rstd, N, C);
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
    bf16* logits = mem.put(bf16s(NV, 18, 4.f));
    float* token_losses = mem.filled(size_t(N), nan);
    float* sample_losses = mem.filled(size_t(B), nan);
    const float scale = 1.f / T;
    kernels::gpu_ops::classifier_rows_bf16(launch, token_losses, logits, targets, first, V, Vp, scale);
    kernels::gpu_ops::classifier_rows_bf16(launch, token_losses + first, logits + size_t(first) * Vp, targets + first,
                                           N - first, V, Vp, scale);
    kernels::gpu_ops::sample_mean_losses(launch, sample_losses, token_losses, B, T);
    keep("classifier: token losses", token_losses, size_t(N));
    keep("classifier: sample losses", sample_losses, size_t(B));
    keep("classifier: dlogits", logits, NV);
  }

  // AdamW over one flat buffer in one launch, writing the bf16 copies (step 3's bias corrections).
  {
    const size_t n = size_t(1) << 20;
    std::vector<kernels::AdamWSegment> table;
    kernels::append_adamw_segments(table, 0, 0, n, true);
    const kernels::AdamWSegment* segments = mem.put(table);
    float* params = mem.put(uniforms(n, 19, 1.f));
    const float* grads = mem.put(uniforms(n, 20, 1.f));
    float* m = mem.put(uniforms(n, 21, 0.1f));
    float* v = mem.put(uniforms(n, 22, 0.01f, 0.011f));  // positive
    bf16* copies = mem.filled(n, bf16_nan);
    const float beta1 = 0.9f, beta2 = 0.95f;
    kernels::gpu_ops::adamw_update(launch, params, copies, grads, m, v, segments, table.size(),
                                   {6e-4f, beta1, beta2, 1e-8f, 0.1f, 0.5f, 1.f - beta1 * beta1 * beta1,
                                    1.f - beta2 * beta2 * beta2});
    keep("adamw: params", params, n);
    keep("adamw: m", m, n);
    keep("adamw: v", v, n);
    keep("adamw: bf16 copies", copies, n);
  }
  return outputs;
}

}  // namespace eth::test::bf16_kernels

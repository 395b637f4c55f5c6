// One transformer block's forward, written once for training (Stage::layers_forward) and for
// generation (Generator::extend), each passing its attention: the Stage's keeps what backward
// needs (Backend::attention_forward), the Generator's appends to the key/value cache
// (Backend::attention_decode). From the block's first layernorm, already computed, to its output
// and the layernorm after it, fused with the residual add as every block's second layernorm is:
//
//   qkv = ln1 @ qkv_w^T + qkv_b                      (N, 3C)
//   atty = attend(qkv)                               (N, C)
//   res2 = x + atty @ attproj_w^T + attproj_b;  ln2 = layernorm(res2)
//   fch = ln2 @ fc_w^T + fc_b;  fch_gelu = GELU(fch) (N, 4C)
//   res3 = res2 + fch_gelu @ fcproj_w^T + fcproj_b;  next.out = layernorm(res3) where there is one
//
// Every tensor has N = B * T rows of the backend's storage type.
#pragma once

#include "kernels/backend.hpp"
#include "lib/model/param_layout.hpp"

namespace eth {

struct BlockActivations {
  kernels::ConstTensor x;    // (N, C) the block's input
  kernels::ConstTensor ln1;  // (N, C) its first layernorm
  kernels::Tensor qkv;       // (N, 3C)
  kernels::Tensor atty;      // (N, C) attention's output, before the projection
  kernels::Tensor res2;      // (N, C)
  kernels::Tensor ln2;       // (N, C)
  float* ln2_mean;           // (N)
  float* ln2_rstd;           // (N)
  kernels::Tensor fch;       // (N, 4C) before GELU
  kernels::Tensor fch_gelu;  // (N, 4C)
  kernels::Tensor branch;    // (N, C) scratch: each half's projection before its residual add
  kernels::Tensor res3;      // (N, C) the block's output
};

// The layernorm after the block (the next block's first, or the final one), fused with the
// block's last residual add.
struct NextLayernorm {
  kernels::Tensor out;  // (N, C)
  float* mean;          // (N)
  float* rstd;          // (N)
  kernels::ConstTensor weight, bias;  // (C)
};

// `params`: the block's parameters (ParamLayout::layer), at the offsets of `w`. `attend(atty,
// qkv)` computes attention; `next` null: the block ends with the residual add alone.
template <class Attend>
void block_forward(kernels::Backend& backend, const BlockActivations& a, kernels::ConstTensor params,
                   const LayerOffsets& w, int N, int C, const Attend& attend, const NextLayernorm* next) {
  backend.matmul_forward(a.qkv, a.ln1, params + w.qkv_w, params + w.qkv_b, N, C, 3 * C);
  attend(a.atty, kernels::ConstTensor(a.qkv));
  backend.matmul_forward(a.branch, a.atty, params + w.attproj_w, params + w.attproj_b, N, C, C);
  backend.residual_layernorm_forward(a.res2, a.ln2, a.ln2_mean, a.ln2_rstd, a.x, a.branch, params + w.ln2_w,
                                     params + w.ln2_b, N, C);
  backend.matmul_gelu_forward(a.fch_gelu, a.fch, a.ln2, params + w.fc_w, params + w.fc_b, N, C, 4 * C);
  backend.matmul_forward(a.branch, a.fch_gelu, params + w.fcproj_w, params + w.fcproj_b, N, 4 * C, C);
  if (next != nullptr)
    backend.residual_layernorm_forward(a.res3, next->out, next->mean, next->rstd, a.res2, a.branch, next->weight,
                                       next->bias, N, C);
  else
    backend.residual_forward(a.res3, a.res2, a.branch, static_cast<size_t>(N) * C);
}

}  // namespace eth

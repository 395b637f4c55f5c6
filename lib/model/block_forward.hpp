// One transformer block's forward, written once for training (Stage::layers_forward) and for
// generation (Generator::extend), each passing its attention: the Stage's keeps what backward
// needs (Backend::attention_forward), the Generator's appends to the key/value cache
// (Backend::attention_decode). The parts are the model's (lib/model/model_config.hpp): its norm,
// positions, MLP, K/V heads and biases. From the block's first norm, already computed, to its
// output and the norm after it, fused with the residual add as every block's second norm is:
//
//   qkv = ln1 @ qkv_w^T [+ qkv_b]                        (N, QKV)  QKV = (NH + 2 NKV) hs
//   [rotary: q and k of each qkv row turned in place, at positions T0 + t]
//   atty = attend(qkv)                                   (N, NH hs)
//   res2 = x + atty @ attproj_w^T [+ attproj_b];  ln2 = norm(res2)
//   fch = ln2 @ fc_w^T [+ fc_b]                          (N, F)    F = 4C (GELU), 2 FC (SwiGLU: gate, up)
//   fch_act = GELU(fch), or silu(gate) * up              (N, FA)   FA = 4C, or FC
//   res3 = res2 + fch_act @ fcproj_w^T [+ fcproj_b];  next.out = norm(res3) where there is one
//
// Every tensor has N = B * T rows of the backend's storage type; norm statistics are fp32.
#pragma once

#include "kernels/backend.hpp"
#include "lib/model/model_norm.hpp"
#include "lib/model/model_tensors.hpp"
#include "lib/model/param_layout.hpp"

namespace eth {

struct BlockActivations {
  kernels::ConstTensor x;    // (N, C) the block's input
  kernels::ConstTensor ln1;  // (N, C) its first norm
  kernels::Tensor qkv;       // (N, QKV), q and k turned where positions are rotary
  kernels::Tensor atty;      // (N, NH hs) attention's output, before the projection
  kernels::Tensor res2;      // (N, C)
  NormOutput ln2;            // (N, C) and its statistics
  kernels::Tensor fch;       // (N, F) before the activation
  kernels::Tensor fch_act;   // (N, FA)
  kernels::Tensor branch;    // (N, C) scratch: each half's projection before its residual add
  kernels::Tensor res3;      // (N, C) the block's output
};

// Where the block's rows sit: B samples of T rows, the first at position T0 (generation's
// offset; 0 in training), and the rotary table (hs / 2 inverse frequencies on the device; null
// with learned positions).
struct BlockRows {
  int B, T, T0;
  const float* inv_freq;
};

// `params`: the block's parameters (ParamLayout::layer), at the offsets of `w`. `attend(atty,
// qkv)` computes attention; `next` null: the block ends with the residual add alone.
template <class Attend>
void block_forward(kernels::Backend& backend, const ModelConfig& config, const BlockActivations& a,
                   kernels::ConstTensor params, const LayerOffsets& w, BlockRows rows, const Attend& attend,
                   const NextNorm* next) {
  const int N = rows.B * rows.T, C = config.channels;
  const LayerWidths W = layer_widths(config);
  const ModelNorm norm(backend, config);
  auto bias = [&](size_t offset) { return optional_tensor(params, offset); };
  const int QKV = static_cast<int>(W.qkv), Q = static_cast<int>(W.atty), F = static_cast<int>(W.fc),
            FA = static_cast<int>(W.fc_act);

  backend.matmul_forward(a.qkv, a.ln1, params + w.qkv_w, bias(w.qkv_b), N, C, QKV);
  if (config.positions == PositionKind::rotary)
    backend.rotary_forward(a.qkv, rows.inv_freq, rows.B, rows.T, rows.T0, attention_heads(config));
  attend(a.atty, kernels::ConstTensor(a.qkv));
  backend.matmul_forward(a.branch, a.atty, params + w.attproj_w, bias(w.attproj_b), N, Q, C);
  norm.residual_forward(a.res2, a.ln2, a.x, a.branch, params + w.ln2_w, bias(w.ln2_b), N);
  if (config.mlp == MlpKind::gelu) {
    backend.matmul_gelu_forward(a.fch_act, a.fch, a.ln2.out, params + w.fc_w, bias(w.fc_b), N, C, F);
  } else {
    backend.matmul_forward(a.fch, a.ln2.out, params + w.fc_w, bias(w.fc_b), N, C, F);
    backend.swiglu_forward(a.fch_act, a.fch, N, FA);
  }
  backend.matmul_forward(a.branch, a.fch_act, params + w.fcproj_w, bias(w.fcproj_b), N, FA, C);
  if (next != nullptr)
    norm.residual_forward(a.res3, next->out, a.res2, a.branch, next->weight, next->bias, N);
  else
    backend.residual_forward(a.res3, a.res2, a.branch, static_cast<size_t>(N) * C);
}

}  // namespace eth

// CPU reference implementations of every GPT-2 operation, written once as templates over the
// scalar type: float is the CPU backend that trains, double is what the finite-difference
// tests differentiate. Shapes and accumulation conventions are those of kernels/backend.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/adamw_segments.hpp"
#include "kernels/attention_heads.hpp"
#include "kernels/bf16.hpp"
#include "kernels/fp16.hpp"

namespace eth::kernels::cpu {

template <typename F>
void encoder_forward(F* out, const int32_t* tokens, const F* wte, const F* wpe, int B, int T, int C);
template <typename F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const int32_t* tokens, int B, int T, int C);

template <typename F>
void layernorm_forward(F* out, F* mean, F* rstd, const F* inp, const F* weight, const F* bias,
                       int N, int C);
template <typename F>
void layernorm_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp,
                        const F* weight, const F* mean, const F* rstd, int N, int C);

template <typename F>
void matmul_forward(F* out, const F* inp, const F* weight, const F* bias, int N, int C, int OC);
template <typename F>
void matmul_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp, const F* weight,
                     int N, int C, int OC);

// Causal attention over `heads` (kernels/attention_heads.hpp: NH query heads sharing NKV K/V
// heads; qkv (B, T, (NH + 2 NKV) hs), out (B, T, NH hs); dK and dV summed over each K/V head's
// group in one fixed order). Materialised (kernels/cpu/materialised_attention.cpp): att
// (B, NH, T, T) keeps every softmax probability for backward. The CPU backend's choice below
// kCpuMaterialisedBelowT (kernels/attention_path.hpp), and the float64 reference of the tests.
template <typename F>
void materialised_attention_forward(F* out, F* att, const F* qkv, int B, int T, AttentionHeads heads);
template <typename F>
void materialised_attention_backward(F* dqkv, const F* dout, const F* qkv, const F* att, int B, int T,
                                     AttentionHeads heads);

// Causal attention, blocked (kernels/cpu/flash_attention.cpp): what the CUDA backend runs, and
// the CPU backend from kCpuMaterialisedBelowT on. Keeps
// lse (B, NH, T), each row's log-sum-exp of its scaled scores; backward recomputes the
// probabilities from q, k and lse, and reads forward's out (B, T, C).
template <typename F>
void flash_attention_forward(F* out, F* lse, const F* qkv, int B, int T, AttentionHeads heads);
template <typename F>
void flash_attention_backward(F* dqkv, const F* dout, const F* qkv, const F* out, const F* lse,
                              int B, int T, AttentionHeads heads);

// Incremental attention against a key/value cache (kernels/cpu/decode_attention.cpp), with
// Backend::attention_decode's contract: writes the Tn new keys and values into the caches at
// [T0, T0 + Tn), then each new row attends causally to positions [0, T0 + i]. Caches
// (B, NKV, Tmax, hs).
template <typename F>
void attention_decode(F* out, F* k_cache, F* v_cache, const F* qkv_new, int B, int Tn, int T0, int Tmax,
                      AttentionHeads heads);

template <typename F>
void gelu_forward(F* out, const F* inp, size_t n);
template <typename F>
void gelu_backward(F* dinp, const F* inp, const F* dout, size_t n);

template <typename F>
void residual_forward(F* out, const F* a, const F* b, size_t n);

template <typename F>
void crossentropy_forward_backward(F* sample_losses, F* logits, const int32_t* targets,
                                   int B, int T, int V, int Vp, F dlogits_scale);

template <typename F>
double sum_of_squares(const F* x, size_t n);

// Over the segments of a table (kernels/adamw_segments.hpp); weight_decay where a segment
// decays; param_copies (E = bf16 or fp16), where given, gets each updated parameter rounded to E
// (E = F: none, param_copies null).
template <typename F, typename E>
void adamw_update(F* params, E* param_copies, const F* grads, F* m, F* v, const AdamWSegment* segments,
                  size_t count, F lr, F beta1, F beta2, F eps, F weight_decay, F grad_scale, int step);

}  // namespace eth::kernels::cpu

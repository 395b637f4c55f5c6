// CPU reference implementations of the Llama family's operations (kernels/cpu/llama_ops.cpp):
// RMSNorm, rotary positions and SwiGLU, written once as templates over the scalar type like
// gpt_ops.hpp (float trains, double is what the finite-difference tests differentiate). Each
// follows transformers' LlamaForCausalLM:
//
//   RMSNorm:  out = weight * (x * rstd),  rstd = 1 / sqrt(mean(x^2) + eps)  (statistics in double
//             here, fp32 on the GPU; x * rstd rounded to the storage type before the weight, as
//             transformers casts it back to the input's dtype first)
//   rotary:   each head's first half rotated against its second ("rotate_half"): for i < hs / 2,
//             (x_i, x_{i+hs/2}) -> (x_i cos - x_{i+hs/2} sin, x_{i+hs/2} cos + x_i sin), the angle
//             (T0 + t) * inv_freq[i] in fp32, on the NH query heads and NKV key heads of qkv
//   SwiGLU:   out = silu(gate) * up, gate and up side by side in one (N, 2 FC) row
//
// Shapes as in kernels/backend_ops.hpp: N rows, C channels, qkv rows of (NH + 2 NKV) hs: q, k, v.
#pragma once

#include <cstddef>

namespace eth::kernels::cpu {

template <typename F>
void rmsnorm_forward(F* out,          // (N, C)
                     F* rstd,         // (N)
                     const F* inp,    // (N, C)
                     const F* weight, // (C)
                     int N, int C, double eps);
// dinp and dweight ACCUMULATE (+=), as layernorm_backward's do.
template <typename F>
void rmsnorm_backward(F* dinp,         // (N, C) accumulated
                      F* dweight,      // (C) accumulated
                      const F* dout,   // (N, C)
                      const F* inp,    // (N, C)
                      const F* weight, // (C)
                      const F* rstd,   // (N)
                      int N, int C);

// In place on q and k; row t of sample b is at position T0 + t. inv_freq (hs / 2) in fp32.
template <typename F>
void rotary_forward(F* qkv,                 // (B, T, (NH + 2 NKV) hs)
                    const float* inv_freq,  // (hs / 2)
                    int B, int T, int T0, int NH, int NKV, int hs);
// The rotation's transpose, in place on dq and dk (dv untouched).
template <typename F>
void rotary_backward(F* dqkv,                // (B, T, (NH + 2 NKV) hs)
                     const float* inv_freq,  // (hs / 2)
                     int B, int T, int T0, int NH, int NKV, int hs);

template <typename F>
void swiglu_forward(F* out,        // (N, FC)
                    const F* inp,  // (N, 2 FC): gate, then up
                    int N, int FC);
// dinp overwritten.
template <typename F>
void swiglu_backward(F* dinp,       // (N, 2 FC)
                     const F* inp,  // (N, 2 FC)
                     const F* dout, // (N, FC)
                     int N, int FC);

}  // namespace eth::kernels::cpu

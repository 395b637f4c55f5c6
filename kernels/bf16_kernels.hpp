// A device's native bf16 kernels (kernels/gpu_ops: cuBLASLt GEMMs, flash attention on mma.sync,
// the one-launch layernorm backward, the chunked classifier, and the encoder, layernorm forward,
// GELU and residual kernels at E = bf16), for the bf16 path
// (kernels/bf16_rounding_backend.hpp) to run in place of its fp32-compute ops where a device has
// them: GPUs of compute capability 8.0 and later, and the kernel interpreter (cuda-emulated).
// Backend::bf16_kernels() is null on every other device, which then computes bf16 in fp32.
//
// Every tensor here is bf16 in the device's memory and every parameter a bf16 copy; gradients of
// parameters, statistics and losses are fp32. Each call is enqueued on the device's compute
// stream, as every Backend op is. Shapes are kernels/backend.hpp's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/bf16.hpp"

namespace eth::kernels {

// The head sizes (C / NH) the bf16 flash attention kernels are compiled for; at any other the
// bf16 path computes attention in fp32.
constexpr bool bf16_attention_head_size(int head_size) { return head_size == 64 || head_size == 128; }

// The widths (pre_gelu's columns) at which GELU and its gradient fuse into a GEMM's epilogue:
// cuBLASLt takes the aux matrix's leading dimension in multiples of 8. At others the bf16 path
// runs the fused op in fp32 (the same numbers).
constexpr bool gelu_epilogue_width(int columns) { return columns % 8 == 0; }

class Bf16Kernels {
 public:
  virtual ~Bf16Kernels() = default;

  // The embedding: out (B, T, C) from the fp32 masters wte (Vp, C) and wpe (maxT, C), read as
  // their bf16 copies (rounded as read: the rows read are known on the device only); its
  // backward accumulates into dwte and dwpe (either may be null) in fp32.
  virtual void encoder_forward(bf16* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                               int C) = 0;
  virtual void encoder_backward(float* dwte, float* dwpe, const bf16* dout, const int32_t* tokens, int B, int T,
                                int C) = 0;
  // out (N, C), mean and rstd (N) fp32; weight and bias (C).
  virtual void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* weight,
                                 const bf16* bias, int N, int C) = 0;
  // Elementwise over n: GELU (backward may run in place, dinp == dout) and the residual add.
  virtual void gelu_forward(bf16* out, const bf16* inp, size_t n) = 0;
  virtual void gelu_backward(bf16* dinp, const bf16* inp, const bf16* dout, size_t n) = 0;
  virtual void residual_forward(bf16* out, const bf16* a, const bf16* b, size_t n) = 0;
  // out = inp @ weight^T + bias (bias may be null): (N, OC) from (N, C) and (OC, C).
  virtual void matmul_forward(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias, int N, int C,
                              int OC) = 0;
  // dinp (N, C) overwritten; dweight (OC, C) and dbias (OC, or null) accumulated in fp32.
  virtual void matmul_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                               const bf16* weight, int N, int C, int OC) = 0;
  // The fused forms of kernels/backend.hpp: GELU in the fc GEMM's epilogue (from the fp32 sum;
  // pre_gelu (N, OC) stored bf16), dGELU in fc_proj's dinp GEMM's epilogue (dpre_gelu (N, C)
  // overwritten), both at widths gelu_epilogue_width takes; the residual add with the layernorm
  // after it (residual and out (N, C) bf16, of the residual as stored).
  virtual void matmul_gelu_forward(bf16* out, bf16* pre_gelu, const bf16* inp, const bf16* weight, const bf16* bias,
                                   int N, int C, int OC) = 0;
  virtual void matmul_dgelu_backward(bf16* dpre_gelu, float* dweight, float* dbias, const bf16* dout,
                                     const bf16* inp, const bf16* weight, const bf16* pre_gelu, int N, int C,
                                     int OC) = 0;
  virtual void residual_layernorm_forward(bf16* residual, bf16* out, float* mean, float* rstd, const bf16* a,
                                          const bf16* b, const bf16* weight, const bf16* bias, int N, int C) = 0;
  // Causal attention with the log-sum-exp kept (B, NH, T), at the head sizes bf16_attention_head_size takes.
  virtual void attention_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH) = 0;
  virtual void attention_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out, const float* lse,
                                  int B, int T, int C, int NH) = 0;
  // dinp (N, C) accumulated; dweight, dbias (C) accumulated in fp32.
  virtual void layernorm_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                                  const bf16* weight, const float* mean, const float* rstd, int N, int C) = 0;
  // Softmax + cross-entropy over the first V of Vp bf16 logits (B, T, Vp); token_losses (B, T) is
  // scratch; sample_losses (B) the per-sample means. dlogits_scale != 0: the logits are overwritten
  // with dlogits_scale * (softmax - onehot) / T (bf16).
  virtual void crossentropy_forward_backward(float* sample_losses, float* token_losses, bf16* logits,
                                             const int32_t* targets, int B, int T, int V, int Vp,
                                             float dlogits_scale) = 0;
};

}  // namespace eth::kernels

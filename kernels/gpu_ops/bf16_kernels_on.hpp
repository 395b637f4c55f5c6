// The Bf16Kernels of a device that runs the GPU ops (kernels/bf16_kernels.hpp): each call is one
// of the bf16 families of ops.hpp on the device's Launch (CudaLaunch: nvcc's instantiations in
// kernels/cuda/*_bf16.cu; HostLaunch: the interpreter, kernels/emulated).
#pragma once

#include "kernels/bf16_kernels.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {

template <class Launch>
class Bf16KernelsOn final : public Bf16Kernels {
 public:
  explicit Bf16KernelsOn(Launch& launch) : launch_(launch) {}

  void encoder_forward(bf16* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                       int C) override {
    gpu_ops::encoder_forward(launch_, out, tokens, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, const bf16* dout, const int32_t* tokens, int B, int T,
                        int C) override {
    gpu_ops::encoder_backward(launch_, dwte, dwpe, dout, tokens, B, T, C);
  }
  void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* weight, const bf16* bias,
                         int N, int C) override {
    gpu_ops::layernorm_forward(launch_, out, mean, rstd, inp, weight, bias, N, C);
  }
  void gelu_forward(bf16* out, const bf16* inp, size_t n) override { gpu_ops::gelu_forward(launch_, out, inp, n); }
  void gelu_backward(bf16* dinp, const bf16* inp, const bf16* dout, size_t n) override {
    gpu_ops::gelu_backward(launch_, dinp, inp, dout, n);
  }
  void residual_forward(bf16* out, const bf16* a, const bf16* b, size_t n) override {
    gpu_ops::residual_forward(launch_, out, a, b, n);
  }
  void matmul_forward(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias, int N, int C,
                      int OC) override {
    matmul_forward_bf16(launch_, out, nullptr, inp, weight, bias, N, C, OC);
  }
  void matmul_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                       const bf16* weight, int N, int C, int OC) override {
    matmul_backward_bf16(launch_, dinp, dweight, dbias, dout, inp, weight, nullptr, N, C, OC);
  }
  void matmul_gelu_forward(bf16* out, bf16* pre_gelu, const bf16* inp, const bf16* weight, const bf16* bias, int N,
                           int C, int OC) override {
    matmul_forward_bf16(launch_, out, pre_gelu, inp, weight, bias, N, C, OC);
  }
  void matmul_dgelu_backward(bf16* dpre_gelu, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                             const bf16* weight, const bf16* pre_gelu, int N, int C, int OC) override {
    matmul_backward_bf16(launch_, dpre_gelu, dweight, dbias, dout, inp, weight, pre_gelu, N, C, OC);
  }
  void residual_layernorm_forward(bf16* residual, bf16* out, float* mean, float* rstd, const bf16* a, const bf16* b,
                                  const bf16* weight, const bf16* bias, int N, int C) override {
    fused_residual_layernorm_forward_bf16(launch_, residual, out, mean, rstd, a, b, weight, bias, N, C);
  }
  void attention_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH) override {
    attention_forward_bf16(launch_, out, lse, qkv, B, T, C, NH);
  }
  void attention_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out, const float* lse, int B,
                          int T, int C, int NH) override {
    attention_backward_bf16(launch_, dqkv, dout, qkv, out, lse, B, T, C, NH);
  }
  void layernorm_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                          const bf16* weight, const float* mean, const float* rstd, int N, int C) override {
    layernorm_backward_bf16(launch_, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  void crossentropy_forward_backward(float* sample_losses, float* token_losses, bf16* logits, const int32_t* targets,
                                     int B, int T, int V, int Vp, float dlogits_scale) override {
    classifier_rows_bf16(launch_, token_losses, logits, targets, B * T, V, Vp, dlogits_scale / static_cast<float>(T));
    sample_mean_losses(launch_, sample_losses, token_losses, B, T);
  }

 private:
  Launch& launch_;
};

}  // namespace eth::kernels::gpu_ops

// The GPT operations of the Backend interface on the GPU ops (ops.hpp), once for every backend
// that runs them: the CUDA backend (Base = Backend, Launch = CudaLaunch) and the emulated one
// (Base = ForwardingBackend over host memory, Launch = HostLaunch). A backend derived from it
// supplies memory, ordering and launch(); which kernels each operation runs is decided here and in
// ops.hpp's families alone.
#pragma once

#include <cmath>
#include <utility>

#include "kernels/backend.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {

template <class Base, class Launch>
class GpuOpsBackend : public Base {
 public:
  template <typename... Args>
  explicit GpuOpsBackend(Args&&... args) : Base(std::forward<Args>(args)...) {}

  void round_to_bf16(float* out, const float* inp, size_t n) override {
    gpu_ops::round_to_bf16(launch(), out, inp, n);
  }
  void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                       int C) override {
    gpu_ops::encoder_forward(launch(), out, tokens, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T,
                        int C) override {
    gpu_ops::encoder_backward(launch(), dwte, dwpe, dout, tokens, B, T, C);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                         const float* bias, int N, int C) override {
    gpu_ops::layernorm_forward(launch(), out, mean, rstd, inp, weight, bias, N, C);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int N, int C) override {
    gpu_ops::layernorm_backward(launch(), dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                      int OC) override {
    gpu_ops::matmul_forward(launch(), out, inp, weight, bias, N, C, OC);
  }
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, int N, int C, int OC) override {
    gpu_ops::matmul_backward(launch(), dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }
  // The blocked kernel at every T: on a GPU the materialised one would only cost memory.
  AttentionPath attention_path(int) const override { return AttentionPath::blocked; }
  void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH) override {
    gpu_ops::attention_forward(launch(), out, lse, qkv, B, T, C, NH);
  }
  void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                          int B, int T, int C, int NH) override {
    gpu_ops::attention_backward(launch(), dqkv, dout, qkv, out, lse, B, T, C, NH);
  }
  void attention_decode(float* out, float* k_cache, float* v_cache, const float* qkv_new, int B, int Tn, int T0,
                        int Tmax, int C, int NH) override {
    gpu_ops::attention_decode(launch(), out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH);
  }
  void gelu_forward(float* out, const float* inp, size_t n) override { gpu_ops::gelu_forward(launch(), out, inp, n); }
  void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n) override {
    gpu_ops::gelu_backward(launch(), dinp, inp, dout, n);
  }
  void residual_forward(float* out, const float* a, const float* b, size_t n) override {
    gpu_ops::residual_forward(launch(), out, a, b, n);
  }
  void crossentropy_forward_backward(float* sample_losses, float* logits, const int32_t* targets, int B, int T,
                                     int V, int Vp, float dlogits_scale) override {
    gpu_ops::crossentropy_forward_backward(launch(), sample_losses, logits, targets, B, T, V, Vp, dlogits_scale);
  }
  void accumulate_sum(double* total, const float* x, size_t n) override {
    gpu_ops::accumulate_sum(launch(), total, x, n);
  }
  double sum_of_squares(const float* x, size_t n) override { return gpu_ops::sum_of_squares(launch(), x, n); }
  void adamw_update(float* params, const float* grads, float* m, float* v, size_t n, const AdamWParams& hp) override {
    // The bias corrections exactly as the CPU twin computes them.
    const float correction1 = 1.f - static_cast<float>(std::pow(static_cast<double>(hp.beta1), hp.step));
    const float correction2 = 1.f - static_cast<float>(std::pow(static_cast<double>(hp.beta2), hp.step));
    gpu_ops::adamw_update(launch(), params, grads, m, v, n, hp.lr, hp.beta1, hp.beta2, hp.eps, hp.weight_decay,
                          hp.grad_scale, correction1, correction2);
  }

 protected:
  virtual Launch& launch() = 0;
};

}  // namespace eth::kernels::gpu_ops

// A Backend that passes every call to another one, its device (ForwardingDevice) and its
// operations: the base of decorators that change a few operations and leave the rest
// (kernels/bf16_rounding_backend.cpp, bench/timing_backend.hpp). Does not own the inner backend.
#pragma once

#include "kernels/backend.hpp"
#include "kernels/forwarding_device.hpp"

namespace eth::kernels {

class ForwardingBackend : public ForwardingDevice<Backend> {
 public:
  explicit ForwardingBackend(Backend& inner) : ForwardingDevice<Backend>(inner), inner_(inner) {}

  // ---- precision -----------------------------------------------------------------------
  Precision precision() const override { return inner_.precision(); }
  std::string precision_path() const override { return inner_.precision_path(); }
  void reserve_workspace(const StageShape& shape) override { inner_.reserve_workspace(shape); }
  OpsDevice ops_device() const override { return inner_.ops_device(); }
  void round_to_bf16(float* out, const float* inp, size_t n) override { inner_.round_to_bf16(out, inp, n); }
  void convert(Tensor out, ConstTensor inp, size_t n) override { inner_.convert(out, inp, n); }
  Bf16Kernels* bf16_kernels() override { return inner_.bf16_kernels(); }
  bool runs_bf16_kernels() const override { return inner_.runs_bf16_kernels(); }

  // ---- GPT-2 forward and backward --------------------------------------------------------
  void encoder_forward(Tensor out, const int32_t* tokens, ConstTensor wte, ConstTensor wpe, int B, int T,
                       int C) override {
    inner_.encoder_forward(out, tokens, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, ConstTensor dout, const int32_t* tokens, int B, int T,
                        int C) override {
    inner_.encoder_backward(dwte, dwpe, dout, tokens, B, T, C);
  }
  void layernorm_forward(Tensor out, float* mean, float* rstd, ConstTensor inp, ConstTensor weight,
                         ConstTensor bias, int N, int C) override {
    inner_.layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
  }
  void layernorm_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                          ConstTensor weight, const float* mean, const float* rstd, int N, int C) override {
    inner_.layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  void matmul_forward(Tensor out, ConstTensor inp, ConstTensor weight, ConstTensor bias, int N, int C,
                      int OC) override {
    inner_.matmul_forward(out, inp, weight, bias, N, C, OC);
  }
  void matmul_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                       ConstTensor weight, int N, int C, int OC) override {
    inner_.matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }
  AttentionPath attention_path(int T) const override { return inner_.attention_path(T); }
  void attention_forward(Tensor out, float* saved, ConstTensor qkv, int B, int T, int C, int NH) override {
    inner_.attention_forward(out, saved, qkv, B, T, C, NH);
  }
  void attention_backward(Tensor dqkv, ConstTensor dout, ConstTensor qkv, ConstTensor out, const float* saved,
                          int B, int T, int C, int NH) override {
    inner_.attention_backward(dqkv, dout, qkv, out, saved, B, T, C, NH);
  }
  void attention_decode(Tensor out, Tensor k_cache, Tensor v_cache, ConstTensor qkv_new, int B, int Tn, int T0,
                        int Tmax, int C, int NH) override {
    inner_.attention_decode(out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH);
  }
  void gelu_forward(Tensor out, ConstTensor inp, size_t n) override { inner_.gelu_forward(out, inp, n); }
  void gelu_backward(Tensor dinp, ConstTensor inp, ConstTensor dout, size_t n) override {
    inner_.gelu_backward(dinp, inp, dout, n);
  }
  void residual_forward(Tensor out, ConstTensor a, ConstTensor b, size_t n) override {
    inner_.residual_forward(out, a, b, n);
  }
  void matmul_gelu_forward(Tensor out, Tensor pre_gelu, ConstTensor inp, ConstTensor weight, ConstTensor bias, int N,
                           int C, int OC) override {
    inner_.matmul_gelu_forward(out, pre_gelu, inp, weight, bias, N, C, OC);
  }
  void matmul_dgelu_backward(Tensor dpre_gelu, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                             ConstTensor weight, ConstTensor pre_gelu, int N, int C, int OC) override {
    inner_.matmul_dgelu_backward(dpre_gelu, dweight, dbias, dout, inp, weight, pre_gelu, N, C, OC);
  }
  void residual_layernorm_forward(Tensor residual, Tensor out, float* mean, float* rstd, ConstTensor a, ConstTensor b,
                                  ConstTensor weight, ConstTensor bias, int N, int C) override {
    inner_.residual_layernorm_forward(residual, out, mean, rstd, a, b, weight, bias, N, C);
  }
  void crossentropy_forward_backward(float* sample_losses, Tensor logits, const int32_t* targets, int B, int T,
                                     int V, int Vp, float dlogits_scale) override {
    inner_.crossentropy_forward_backward(sample_losses, logits, targets, B, T, V, Vp, dlogits_scale);
  }
  void accumulate_sum(double* total, const float* x, size_t n) override { inner_.accumulate_sum(total, x, n); }

  // ---- optimizer -------------------------------------------------------------------------
  double sum_of_squares(const float* x, size_t n) override { return inner_.sum_of_squares(x, n); }
  void adamw_update(float* params, bf16* param_copies, const float* grads, float* m, float* v,
                    const AdamWSegment* segments, size_t count, const AdamWParams& hp) override {
    inner_.adamw_update(params, param_copies, grads, m, v, segments, count, hp);
  }

 protected:
  Backend& inner_;
};

}  // namespace eth::kernels

// A Backend that forwards every call to another one and adds its wall time to a per-operation
// total: the profile of a training step, op by op, with no change to lib/ or kernels/. Matmuls
// are keyed by shape as well, so the LM head stands apart from the layer GEMMs.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "kernels/forwarding_backend.hpp"

namespace eth::bench {

using kernels::ConstTensor;
using kernels::Tensor;

struct OpTotal {
  double ms = 0.0;
  long calls = 0;
};

class TimingBackend : public kernels::ForwardingBackend {
 public:
  explicit TimingBackend(kernels::Backend& inner) : ForwardingBackend(inner) {}

  const std::map<std::string, OpTotal>& totals() const { return totals_; }
  void reset() { totals_.clear(); }

  std::string name() const override { return inner_.name() + "+timing"; }

  // Memory, ordering and precision pass through untimed (kernels/forwarding_backend.hpp), except
  // the copies; the inner backend must be synchronous (the CPU one) for wall times per operation
  // to mean anything.
  void copy_to_device(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, const void* src, size_t bytes) override;
  void copy_to_device_async(void* dst, const void* src, size_t bytes) override;
  void copy_to_host_async(void* dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void fill_zero(Tensor x, size_t n) override;
  void convert(Tensor out, ConstTensor inp, size_t n) override;

  void encoder_forward(Tensor out, const int32_t* tokens, ConstTensor wte, ConstTensor wpe, int B,
                       int T, int C) override;
  void encoder_backward(float* dwte, float* dwpe, ConstTensor dout, const int32_t* tokens, int B,
                        int T, int C) override;
  void layernorm_forward(Tensor out, float* mean, float* rstd, ConstTensor inp, ConstTensor weight,
                         ConstTensor bias, int N, int C) override;
  void layernorm_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                          ConstTensor weight, const float* mean, const float* rstd, int N,
                          int C) override;
  void matmul_forward(Tensor out, ConstTensor inp, ConstTensor weight, ConstTensor bias, int N, int C,
                      int OC) override;
  void matmul_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                       ConstTensor weight, int N, int C, int OC) override;
  void matmul_gelu_forward(Tensor out, Tensor pre_gelu, ConstTensor inp, ConstTensor weight, ConstTensor bias, int N,
                           int C, int OC) override;
  void matmul_dgelu_backward(Tensor dpre_gelu, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                             ConstTensor weight, ConstTensor pre_gelu, int N, int C, int OC) override;
  void residual_layernorm_forward(Tensor residual, Tensor out, float* mean, float* rstd, ConstTensor a, ConstTensor b,
                                  ConstTensor weight, ConstTensor bias, int N, int C) override;
  void attention_forward(Tensor out, float* saved, ConstTensor qkv, int B, int T, int C, int NH) override;
  void attention_backward(Tensor dqkv, ConstTensor dout, ConstTensor qkv, ConstTensor out, const float* saved,
                          int B, int T, int C, int NH) override;
  void gelu_forward(Tensor out, ConstTensor inp, size_t n) override;
  void gelu_backward(Tensor dinp, ConstTensor inp, ConstTensor dout, size_t n) override;
  void residual_forward(Tensor out, ConstTensor a, ConstTensor b, size_t n) override;
  void crossentropy_forward_backward(float* sample_losses, Tensor logits, const int32_t* targets, int B,
                                     int T, int V, int Vp, float dlogits_scale) override;
  void accumulate_sum(double* total, const float* x, size_t n) override;
  double sum_of_squares(const float* x, size_t n) override;
  void adamw_update(float* params, kernels::bf16* param_copies, const float* grads, float* m, float* v,
                    const kernels::AdamWSegment* segments, size_t count, const kernels::AdamWParams& hp) override;

 protected:
  // Runs f() and adds its wall time under `key`.
  template <typename Fn>
  auto timed(const std::string& key, Fn&& f) {
    const auto start = std::chrono::steady_clock::now();
    struct Record {  // adds the time on every way out, so f may return a value or void
      OpTotal& total;
      std::chrono::steady_clock::time_point start;
      ~Record() {
        total.ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        total.calls++;
      }
    } record{totals_[key], start};
    return f();
  }

 private:
  std::map<std::string, OpTotal> totals_;
};

}  // namespace eth::bench

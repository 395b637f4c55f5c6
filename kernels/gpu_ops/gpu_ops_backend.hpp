// The GPT operations of the Backend interface on the GPU ops (ops.hpp), once for every backend
// that runs them: the CUDA backend (Base = Backend, Launch = CudaLaunch) and the emulated one
// (Base = ForwardingDevice<Backend>, the host memory and stream of a CPU backend, Launch =
// HostLaunch). A backend derived from it supplies memory, ordering and launch(); which kernels
// each operation runs is decided here and in ops.hpp's families alone. Neither base has an
// operation of its own: one missing here leaves the backend abstract, a compile error. The fused
// ops (matmul_gelu_forward, matmul_dgelu_backward, residual_layernorm_forward) run as the two GPU
// ops they fuse (Backend's defaults): the fp32 GPU ops have no fused kernel; the bf16 path's are
// Bf16Kernels.
#pragma once

#include <cmath>
#include <memory>
#include <utility>

#include "kernels/backend.hpp"
#include "kernels/gpu_ops/bf16_kernels_on.hpp"
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
  void convert(Tensor out, ConstTensor inp, size_t n) override {
    if (out.type() == inp.type()) return this->copy(out.data(), inp.data(), n * element_bytes(out.type()));
    if (out.type() == ElementType::bf16) return gpu_ops::convert(launch(), out.as_bf16(), inp.as_f32(), n);
    gpu_ops::convert(launch(), out.as_f32(), inp.as_bf16(), n);
  }
  void encoder_forward(Tensor out, const int32_t* tokens, ConstTensor wte, ConstTensor wpe, int B, int T,
                       int C) override {
    gpu_ops::encoder_forward(launch(), out.as_f32(), tokens, wte.as_f32(), wpe.as_f32(), B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, ConstTensor dout, const int32_t* tokens, int B, int T,
                        int C) override {
    gpu_ops::encoder_backward(launch(), dwte, dwpe, dout.as_f32(), tokens, B, T, C);
  }
  void layernorm_forward(Tensor out, float* mean, float* rstd, ConstTensor inp, ConstTensor weight,
                         ConstTensor bias, int N, int C) override {
    gpu_ops::layernorm_forward(launch(), out.as_f32(), mean, rstd, inp.as_f32(), weight.as_f32(), bias.as_f32(), N, C);
  }
  void layernorm_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                          ConstTensor weight, const float* mean, const float* rstd, int N, int C) override {
    gpu_ops::layernorm_backward(launch(), dinp.as_f32(), dweight, dbias, dout.as_f32(), inp.as_f32(), weight.as_f32(),
                                mean, rstd, N, C);
  }
  void matmul_forward(Tensor out, ConstTensor inp, ConstTensor weight, ConstTensor bias, int N, int C,
                      int OC) override {
    gpu_ops::matmul_forward(launch(), out.as_f32(), inp.as_f32(), weight.as_f32(), bias.as_f32(), N, C, OC);
  }
  void matmul_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                       ConstTensor weight, int N, int C, int OC) override {
    gpu_ops::matmul_backward(launch(), dinp.as_f32(), dweight, dbias, dout.as_f32(), inp.as_f32(), weight.as_f32(), N,
                             C, OC);
  }
  // The blocked kernel at every T: on a GPU the materialised one would only cost memory.
  AttentionPath attention_path(int) const override { return AttentionPath::blocked; }
  void attention_forward(Tensor out, float* lse, ConstTensor qkv, int B, int T, int C, int NH) override {
    gpu_ops::attention_forward(launch(), out.as_f32(), lse, qkv.as_f32(), B, T, C, NH);
  }
  void attention_backward(Tensor dqkv, ConstTensor dout, ConstTensor qkv, ConstTensor out, const float* lse,
                          int B, int T, int C, int NH) override {
    gpu_ops::attention_backward(launch(), dqkv.as_f32(), dout.as_f32(), qkv.as_f32(), out.as_f32(), lse, B, T, C, NH);
  }
  void attention_decode(Tensor out, Tensor k_cache, Tensor v_cache, ConstTensor qkv_new, int B, int Tn, int T0,
                        int Tmax, int C, int NH) override {
    gpu_ops::attention_decode(launch(), out.as_f32(), k_cache.as_f32(), v_cache.as_f32(), qkv_new.as_f32(), B, Tn, T0,
                              Tmax, C, NH);
  }
  void gelu_forward(Tensor out, ConstTensor inp, size_t n) override { gpu_ops::gelu_forward(launch(), out.as_f32(),
                    inp.as_f32(), n); }
  void gelu_backward(Tensor dinp, ConstTensor inp, ConstTensor dout, size_t n) override {
    gpu_ops::gelu_backward(launch(), dinp.as_f32(), inp.as_f32(), dout.as_f32(), n);
  }
  void residual_forward(Tensor out, ConstTensor a, ConstTensor b, size_t n) override {
    gpu_ops::residual_forward(launch(), out.as_f32(), a.as_f32(), b.as_f32(), n);
  }
  void crossentropy_forward_backward(float* sample_losses, Tensor logits, const int32_t* targets, int B, int T,
                                     int V, int Vp, float dlogits_scale) override {
    gpu_ops::crossentropy_forward_backward(launch(), sample_losses, logits.as_f32(), targets, B, T, V, Vp,
                                           dlogits_scale);
  }
  void accumulate_sum(double* total, const float* x, size_t n) override {
    gpu_ops::accumulate_sum(launch(), total, x, n);
  }
  double sum_of_squares(const float* x, size_t n) override { return gpu_ops::sum_of_squares(launch(), x, n); }
  void adamw_update(float* params, bf16* param_copies, const float* grads, float* m, float* v,
                    const AdamWSegment* segments, size_t count, const AdamWParams& hp) override {
    // The bias corrections exactly as the CPU twin computes them.
    const float correction1 = 1.f - static_cast<float>(std::pow(static_cast<double>(hp.beta1), hp.step));
    const float correction2 = 1.f - static_cast<float>(std::pow(static_cast<double>(hp.beta2), hp.step));
    const gpu_ops::AdamWSettings settings{hp.lr,         hp.beta1,      hp.beta2,    hp.eps,
                                          hp.weight_decay, hp.grad_scale, correction1, correction2};
    gpu_ops::adamw_update(launch(), params, param_copies, grads, m, v, segments, count, settings);
  }

  // The largest op's scratch, the grid counters and (on a GPU) the sort's storage, now
  // (kernels/workspace.hpp); the launch then refuses to grow them inside a step.
  void reserve_workspace(const StageShape& shape) override {
    launch().reserve(launch_scratch_bytes(shape), sorted_rows(shape));
  }

  Bf16Kernels* bf16_kernels() override {
    if (!has_bf16_kernels()) return nullptr;
    if (!bf16_kernels_) bf16_kernels_ = std::make_unique<Bf16KernelsOn<Launch>>(launch());
    return bf16_kernels_.get();
  }

 protected:
  virtual Launch& launch() = 0;
  // Whether the device runs the bf16 families (compute capability 8.0 on; the interpreter does).
  virtual bool has_bf16_kernels() const { return true; }

 private:
  std::unique_ptr<Bf16KernelsOn<Launch>> bf16_kernels_;
};

}  // namespace eth::kernels::gpu_ops

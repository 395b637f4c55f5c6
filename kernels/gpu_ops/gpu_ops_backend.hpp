// The GPT operations of the Backend interface on the GPU ops (ops.hpp), once for every backend
// that runs them: the CUDA backend (Base = Backend, Launch = CudaLaunch) and the emulated one
// (Base = ForwardingDevice<Backend>, the host memory and stream of a CPU backend, Launch =
// HostLaunch). A backend derived from it supplies memory, ordering, launch() and
// runs_mma_16816(), and hands it the precision path it is made for, whose precision and
// arithmetic it reports; which kernels each operation runs is decided here and in ops.hpp's families
// alone. Neither base has an operation of its own: one missing here leaves the backend abstract,
// a compile error.
//
// Each op runs on the element type of its tensors, which is the backend's storage: fp32 tensors
// on the fp32 kernels (cuBLAS sgemm, TF32 where the CUDA backend is made so), bf16 and fp16
// tensors on the 16-bit kernels, one source for both types (E = bf16 or fp16): cuBLASLt GEMMs
// with fused epilogues, flash attention on mma.sync, the fused residual + layernorm forward, the
// one-launch layernorm backward, the chunked classifier, and the families marked E. What has no
// kernel of its type runs on a twin over this backend's fp32 kernels (kernels/twin_backend.hpp):
// the same numbers, fp32 compute. That is attention at head sizes other than 64 and 128, and at
// every one on a device without mma.m16n8k16 (runs_mma_16816: compute capability 7.x, where
// only fp16 backends are made); the fused GELU at widths its epilogue does not take; decoding's
// attention.
#pragma once

#include <cassert>
#include <cmath>
#include <type_traits>
#include <memory>
#include <utility>
#include <stdexcept>
#include <string>

#include "kernels/backend.hpp"
#include "kernels/twin_backend.hpp"
#include "kernels/gpu_ops/ops.hpp"
#include "kernels/gpu_ops/scratch.hpp"

namespace eth::kernels::gpu_ops {

template <class Base, class Launch>
class GpuOpsBackend : public Base {
 public:
  // `path`: what the backend is made for. Its tensors of each type run on that type's kernels: a
  // 16-bit path in fp32 arithmetic is the twin's (kernels/twin_backend.hpp), never this backend's.
  template <typename... Args>
  explicit GpuOpsBackend(const PrecisionPath& path, Args&&... args) : Base(std::forward<Args>(args)...), path_(path) {
    if (path.storage() != ElementType::f32 && path.arithmetic == Arithmetic::fp32)
      throw std::logic_error("the GPU ops made for " + path.name() + ": expected a path on its 16-bit kernels");
  }

  Precision precision() const override { return path_.precision; }
  Arithmetic arithmetic() const override { return path_.arithmetic; }

  void round_to(ElementType type, float* out, const float* inp, size_t n) override {
    assert(type != ElementType::f32);
    if (type == ElementType::bf16) return gpu_ops::round_to<Launch, bf16>(launch(), out, inp, n);
    gpu_ops::round_to<Launch, fp16>(launch(), out, inp, n);
  }
  void convert(Tensor out, ConstTensor inp, size_t n) override {
    between_types(out, inp, n, [&](auto* o, const auto* i) { gpu_ops::convert(launch(), o, i, n); });
  }
  void convert_saturating(Tensor out, ConstTensor inp, size_t n, unsigned* saturated) override {
    // A type to itself has nothing to clamp.
    between_types(out, inp, n, [&](auto* o, const auto* i) { gpu_ops::convert_saturating(launch(), o, i, n, saturated); });
  }
  void encoder_forward(Tensor out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                       int C) override {
    on_any_element(out, [&](auto e) {
      gpu_ops::encoder_forward(launch(), out.as<decltype(e)>(), tokens, wte, wpe, B, T, C);
    });
  }
  void encoder_backward(float* dwte, float* dwpe, ConstTensor dout, const int32_t* tokens, int B, int T,
                        int C) override {
    on_any_element(dout, [&](auto e) {
      gpu_ops::encoder_backward(launch(), dwte, dwpe, dout.as<decltype(e)>(), tokens, B, T, C);
    });
  }
  void layernorm_forward(Tensor out, float* mean, float* rstd, ConstTensor inp, ConstTensor weight,
                         ConstTensor bias, int N, int C) override {
    on_any_element(out, [&](auto e) {
      using E = decltype(e);
      gpu_ops::layernorm_forward(launch(), out.as<E>(), mean, rstd, inp.as<E>(), weight.as<E>(), bias.as<E>(), N, C);
    });
  }
  void layernorm_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                          ConstTensor weight, const float* mean, const float* rstd, int N, int C) override {
    if (dinp.type() == ElementType::f32)
      return gpu_ops::layernorm_backward(launch(), dinp.as_f32(), dweight, dbias, dout.as_f32(), inp.as_f32(),
                                         weight.as_f32(), mean, rstd, N, C);
    on_16bit_element(dinp, [&](auto e) {
      using E = decltype(e);
      layernorm_backward16<Launch, E>(launch(), dinp.as<E>(), dweight, dbias, dout.as<E>(), inp.as<E>(),
                                      weight.as<E>(), mean, rstd, N, C);
    });
  }
  void matmul_forward(Tensor out, ConstTensor inp, ConstTensor weight, ConstTensor bias, int N, int C,
                      int OC) override {
    if (out.type() != ElementType::f32)
      return on_16bit_element(out, [&](auto e) {
        using E = decltype(e);
        matmul_forward16<Launch, E>(launch(), out.as<E>(), nullptr, inp.as<E>(), weight.as<E>(), bias.as<E>(), N, C,
                                    OC);
      });
    gpu_ops::matmul_forward(launch(), out.as_f32(), inp.as_f32(), weight.as_f32(), bias.as_f32(), N, C, OC);
  }
  void matmul_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                       ConstTensor weight, int N, int C, int OC) override {
    if (dinp.type() != ElementType::f32)
      return on_16bit_element(dinp, [&](auto e) {
        using E = decltype(e);
        matmul_backward16<Launch, E>(launch(), dinp.as<E>(), dweight, dbias, dout.as<E>(), inp.as<E>(),
                                     weight.as<E>(), nullptr, N, C, OC);
      });
    gpu_ops::matmul_backward(launch(), dinp.as_f32(), dweight, dbias, dout.as_f32(), inp.as_f32(), weight.as_f32(), N,
                             C, OC);
  }
  // The fused ops: on 16-bit tensors the GEMMs' epilogues and the fused layernorm kernel; the
  // fp32 GPU ops have no fused kernel, so fp32 tensors take the two ops they fuse (Backend's).
  void matmul_gelu_forward(Tensor out, Tensor pre_gelu, ConstTensor inp, ConstTensor weight, ConstTensor bias, int N,
                           int C, int OC) override {
    if (out.type() == ElementType::f32) return Backend::matmul_gelu_forward(out, pre_gelu, inp, weight, bias, N, C, OC);
    if (!gelu_epilogue_width(OC)) return fallback().matmul_gelu_forward(out, pre_gelu, inp, weight, bias, N, C, OC);
    on_16bit_element(out, [&](auto e) {
      using E = decltype(e);
      matmul_forward16<Launch, E>(launch(), out.as<E>(), pre_gelu.as<E>(), inp.as<E>(), weight.as<E>(), bias.as<E>(),
                                  N, C, OC);
    });
  }
  void matmul_dgelu_backward(Tensor dpre_gelu, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                             ConstTensor weight, ConstTensor pre_gelu, int N, int C, int OC) override {
    if (dpre_gelu.type() == ElementType::f32)
      return Backend::matmul_dgelu_backward(dpre_gelu, dweight, dbias, dout, inp, weight, pre_gelu, N, C, OC);
    if (!gelu_epilogue_width(C))
      return fallback().matmul_dgelu_backward(dpre_gelu, dweight, dbias, dout, inp, weight, pre_gelu, N, C, OC);
    on_16bit_element(dpre_gelu, [&](auto e) {
      using E = decltype(e);
      matmul_backward16<Launch, E>(launch(), dpre_gelu.as<E>(), dweight, dbias, dout.as<E>(), inp.as<E>(),
                                   weight.as<E>(), pre_gelu.as<E>(), N, C, OC);
    });
  }
  void residual_layernorm_forward(Tensor residual, Tensor out, float* mean, float* rstd, ConstTensor a, ConstTensor b,
                                  ConstTensor weight, ConstTensor bias, int N, int C) override {
    if (out.type() == ElementType::f32)
      return Backend::residual_layernorm_forward(residual, out, mean, rstd, a, b, weight, bias, N, C);
    on_16bit_element(out, [&](auto e) {
      using E = decltype(e);
      fused_residual_layernorm_forward16<Launch, E>(launch(), residual.as<E>(), out.as<E>(), mean, rstd, a.as<E>(),
                                                    b.as<E>(), weight.as<E>(), bias.as<E>(), N, C);
    });
  }
  // The blocked kernel at every T: on a GPU the materialised one would only cost memory.
  AttentionPath attention_path(int) const override { return AttentionPath::blocked; }
  void attention_forward(Tensor out, float* lse, ConstTensor qkv, int B, int T, AttentionHeads heads) override {
    if (out.type() == ElementType::f32)
      return gpu_ops::attention_forward(launch(), out.as_f32(), lse, qkv.as_f32(), B, T, heads);
    if (!flash_attention(heads.hs)) return fallback().attention_forward(out, lse, qkv, B, T, heads);
    on_16bit_element(out, [&](auto e) {
      using E = decltype(e);
      attention_forward16<Launch, E>(launch(), out.as<E>(), lse, qkv.as<E>(), B, T, heads);
    });
  }
  void attention_backward(Tensor dqkv, ConstTensor dout, ConstTensor qkv, ConstTensor out, const float* lse,
                          int B, int T, AttentionHeads heads) override {
    if (dqkv.type() == ElementType::f32)
      return gpu_ops::attention_backward(launch(), dqkv.as_f32(), dout.as_f32(), qkv.as_f32(), out.as_f32(), lse, B, T,
                                         heads);
    if (!flash_attention(heads.hs)) return fallback().attention_backward(dqkv, dout, qkv, out, lse, B, T, heads);
    on_16bit_element(dqkv, [&](auto e) {
      using E = decltype(e);
      attention_backward16<Launch, E>(launch(), dqkv.as<E>(), dout.as<E>(), qkv.as<E>(), out.as<E>(), lse, B, T,
                                      heads);
    });
  }
  // Decoding has an fp32 kernel only (generation is not where the step's time goes).
  void attention_decode(Tensor out, Tensor k_cache, Tensor v_cache, ConstTensor qkv_new, int B, int Tn, int T0,
                        int Tmax, AttentionHeads heads) override {
    if (out.type() != ElementType::f32)
      return fallback().attention_decode(out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, heads);
    gpu_ops::attention_decode(launch(), out.as_f32(), k_cache.as_f32(), v_cache.as_f32(), qkv_new.as_f32(), B, Tn, T0,
                              Tmax, heads);
  }
  void gelu_forward(Tensor out, ConstTensor inp, size_t n) override {
    on_any_element(out, [&](auto e) {
      gpu_ops::gelu_forward(launch(), out.as<decltype(e)>(), inp.as<decltype(e)>(), n);
    });
  }
  void gelu_backward(Tensor dinp, ConstTensor inp, ConstTensor dout, size_t n) override {
    on_any_element(dinp, [&](auto e) {
      using E = decltype(e);
      gpu_ops::gelu_backward(launch(), dinp.as<E>(), inp.as<E>(), dout.as<E>(), n);
    });
  }
  void residual_forward(Tensor out, ConstTensor a, ConstTensor b, size_t n) override {
    on_any_element(out, [&](auto e) {
      using E = decltype(e);
      gpu_ops::residual_forward(launch(), out.as<E>(), a.as<E>(), b.as<E>(), n);
    });
  }
  void residual_rmsnorm_forward(Tensor residual, Tensor out, float* rstd, ConstTensor a, ConstTensor b,
                                ConstTensor weight, int N, int C, float eps) override {
    if (out.type() == ElementType::f32)  // the fp32 path's two ops, as its layernorm's
      return Backend::residual_rmsnorm_forward(residual, out, rstd, a, b, weight, N, C, eps);
    on_16bit_element(out, [&](auto e) {
      using E = decltype(e);
      fused_residual_rmsnorm_forward16<Launch, E>(launch(), residual.as<E>(), out.as<E>(), rstd, a.as<E>(), b.as<E>(),
                                                  weight.as<E>(), N, C, eps);
    });
  }
  void rmsnorm_forward(Tensor out, float* rstd, ConstTensor inp, ConstTensor weight, int N, int C, float eps) override {
    on_any_element(out, [&](auto e) {
      using E = decltype(e);
      gpu_ops::rmsnorm_forward(launch(), out.as<E>(), rstd, inp.as<E>(), weight.as<E>(), N, C, eps);
    });
  }
  void rmsnorm_backward(Tensor dinp, float* dweight, ConstTensor dout, ConstTensor inp, ConstTensor weight,
                        const float* rstd, int N, int C) override {
    on_any_element(dinp, [&](auto e) {
      using E = decltype(e);
      gpu_ops::rmsnorm_backward(launch(), dinp.as<E>(), dweight, dout.as<E>(), inp.as<E>(), weight.as<E>(), rstd, N, C);
    });
  }
  void rotary_forward(Tensor qkv, const float* inv_freq, int B, int T, int T0, AttentionHeads heads) override {
    on_any_element(qkv, [&](auto e) { gpu_ops::rotary(launch(), qkv.as<decltype(e)>(), inv_freq, B, T, T0, heads, 1.f); });
  }
  void rotary_backward(Tensor dqkv, const float* inv_freq, int B, int T, int T0, AttentionHeads heads) override {
    on_any_element(dqkv,
                   [&](auto e) { gpu_ops::rotary(launch(), dqkv.as<decltype(e)>(), inv_freq, B, T, T0, heads, -1.f); });
  }
  void swiglu_forward(Tensor out, ConstTensor inp, int N, int FC) override {
    on_any_element(out, [&](auto e) {
      using E = decltype(e);
      gpu_ops::swiglu_forward(launch(), out.as<E>(), inp.as<E>(), N, FC);
    });
  }
  void swiglu_backward(Tensor dinp, ConstTensor inp, ConstTensor dout, int N, int FC) override {
    on_any_element(dinp, [&](auto e) {
      using E = decltype(e);
      gpu_ops::swiglu_backward(launch(), dinp.as<E>(), inp.as<E>(), dout.as<E>(), N, FC);
    });
  }
  void crossentropy_forward_backward(float* sample_losses, Tensor logits, const int32_t* targets, int B, int T,
                                     int V, int Vp, float dlogits_scale) override {
    if (logits.type() == ElementType::f32)
      return gpu_ops::crossentropy_forward_backward(launch(), sample_losses, logits.as_f32(), targets, B, T, V, Vp,
                                                    dlogits_scale);
    on_16bit_element(logits, [&](auto e) {
      using E = decltype(e);
      crossentropy_forward_backward16<Launch, E>(launch(), sample_losses, logits.as<E>(), targets, B, T, V, Vp,
                                                 dlogits_scale);
    });
  }
  void accumulate_sum(double* total, const float* x, size_t n) override {
    gpu_ops::accumulate_sum(launch(), total, x, n);
  }
  double sum_of_squares(const float* x, size_t n) override { return gpu_ops::sum_of_squares(launch(), x, n); }
  void adamw_update(float* params, Tensor param_copies, const float* grads, float* m, float* v,
                    const AdamWSegment* segments, size_t count, const AdamWParams& hp) override {
    // The bias corrections exactly as the CPU twin computes them.
    const float correction1 = 1.f - static_cast<float>(std::pow(static_cast<double>(hp.beta1), hp.step));
    const float correction2 = 1.f - static_cast<float>(std::pow(static_cast<double>(hp.beta2), hp.step));
    const gpu_ops::AdamWSettings settings{hp.lr,         hp.beta1,      hp.beta2,    hp.eps,
                                          hp.weight_decay, hp.grad_scale, correction1, correction2};
    if (!param_copies) return gpu_ops::adamw_update<Launch, float>(launch(), params, nullptr, grads, m, v, segments,
                                                                   count, settings);
    on_any_element(param_copies, [&](auto e) {
      gpu_ops::adamw_update(launch(), params, param_copies.as<decltype(e)>(), grads, m, v, segments, count, settings);
    });
  }

  // The largest op's scratch, the grid counters and (on a GPU) the sort's storage, now
  // (kernels/workspace.hpp), and on 16-bit tensors the fallbacks' working copies; the launch then
  // refuses to grow them inside a step.
  void reserve_workspace(const StageShape& shape) override {
    launch().reserve(launch_scratch_bytes(shape), sorted_rows(shape));
    if (path_.storage() != ElementType::f32) fallback().reserve_workspace(shape);
  }

 protected:
  const PrecisionPath& path() const { return path_; }
  virtual Launch& launch() = 0;
  // Whether the device runs mma.sync m16n8k16 and cp.async, which the flash attention kernels
  // need: compute capability 8.0 and later.
  virtual bool runs_mma_16816() const = 0;
  // The derived backend's destructor calls this first: the fallback's working copies are released
  // through the derived backend's memory, which must still be there.
  void release_fallback() { fallback_.reset(); }

 private:
  // Runs f(E{}) with E = bf16 or fp16, the type of a 16-bit t.
  template <class T, class F>
  static void on_16bit_element(const T& t, F&& f) {
    assert(t.type() != ElementType::f32);
    if (t.type() == ElementType::f16) return f(fp16{});
    f(bf16{});
  }
  // A conversion of n elements: f(out, inp) as pointers of two different stored types, or a copy
  // where the types are one (none where out is inp).
  template <class F>
  void between_types(Tensor out, ConstTensor inp, size_t n, F&& f) {
    if (out.type() == inp.type()) {
      if (out.data() != inp.data()) this->copy(out.data(), inp.data(), n * element_bytes(out.type()));
      return;
    }
    on_any_element(out, [&](auto o) {
      on_any_element(inp, [&](auto i) {
        using O = decltype(o);
        using I = decltype(i);
        if constexpr (!std::is_same_v<O, I>) f(out.as<O>(), inp.as<I>());
      });
    });
  }
  // The same over every stored type: float, bf16 or fp16.
  template <class T, class F>
  static void on_any_element(const T& t, F&& f) {
    if (t.type() == ElementType::f32) return f(float{});
    on_16bit_element(t, std::forward<F>(f));
  }
  // Whether the flash kernels take 16-bit attention at head size hs: the sizes they are compiled
  // for, on a device with their matrix instructions.
  bool flash_attention(int hs) const { return flash_attention_head_size(hs) && runs_mma_16816(); }
  // The twin (bf16 or fp16) over this backend, for what the 16-bit kernels do not take.
  Backend& fallback() {
    if (!fallback_) fallback_ = make_twin_fallback(*this);
    return *fallback_;
  }

  PrecisionPath path_;
  std::unique_ptr<Backend> fallback_;
};

}  // namespace eth::kernels::gpu_ops

// The CPU backend: host memory, and the float instantiation of the reference ops.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <algorithm>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "kernels/backend.hpp"
#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/gpt_ops.hpp"
#include "kernels/cpu/llama_ops.hpp"

namespace eth::kernels {
namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(size_t device_memory_bytes) : limit_(device_memory_bytes) {}
  std::string name() const override { return "cpu"; }
  bool host_addressable() const override { return true; }

  // Each operation has run when its call returns: every event is always done.
  // Device memory is counted (the bytes asked for, as a GPU allocator's would be), pinned is not.
  // With ETH_CPU_DEVICE_MEMORY (testing), the backend behaves as a device of that many bytes: it
  // reports what is left as free and refuses an allocation past it, as cudaMalloc would.
  void* allocate(size_t bytes) override {
    std::lock_guard<std::mutex> lock(counted_mutex_);
    if (limit_ > 0 && held_ + bytes > limit_)
      throw std::runtime_error("out of device memory: " + std::to_string(bytes) + " bytes asked for, " +
                               std::to_string(limit_ - held_) + " of ETH_CPU_DEVICE_MEMORY=" + std::to_string(limit_) +
                               " free");
    void* p = aligned(bytes);
    counted_[p] = bytes;
    held_ += bytes;
    peak_ = std::max(peak_, held_);
    return p;
  }
  void release(void* ptr) override {
    if (ptr == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(counted_mutex_);
      auto it = counted_.find(ptr);
      held_ -= it->second;
      counted_.erase(it);
    }
    std::free(ptr);
  }
  void* allocate_pinned(size_t bytes) override { return aligned(bytes); }
  void release_pinned(void* ptr) override { std::free(ptr); }
  size_t peak_allocated_bytes() const override {
    std::lock_guard<std::mutex> lock(counted_mutex_);
    return peak_;
  }
  size_t allocated_bytes() const override {
    std::lock_guard<std::mutex> lock(counted_mutex_);
    return held_;
  }
  size_t free_memory_bytes() const override {
    std::lock_guard<std::mutex> lock(counted_mutex_);
    return limit_ == 0 ? 0 : std::max<size_t>(1, limit_ - held_);  // 0 would mean "not limited"
  }
  void copy_to_device(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_to_device_async(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_to_host_async(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void fill_zero(Tensor x, size_t n) override { std::memset(x.data(), 0, n * element_bytes(x.type())); }

  void synchronize() override {}
  // A plain event is nothing; a timed one holds the time it was recorded, in ms.
  void* create_event() override { return nullptr; }
  void* create_timed_event() override { return new double{0}; }
  void destroy_event(void* event) override { delete static_cast<double*>(event); }
  void record_event(void* event) override {
    if (event != nullptr) *static_cast<double*>(event) = now_ms();
  }
  bool event_done(void*) override { return true; }
  void wait_event(void*) override {}
  double elapsed_ms(void* start,
                    void* end) override { return *static_cast<double*>(end) - *static_cast<double*>(start); }
  void stall(double ms) override { std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms)); }
  void enqueue_host_function(std::function<void()> fn) override { fn(); }

  Precision precision() const override { return Precision::fp32; }
  std::string precision_path() const override { return "fp32"; }
  Arithmetic arithmetic() const override { return Arithmetic::fp32; }
  void round_to(ElementType type, float* out, const float* inp, size_t n) override {
    if (type == ElementType::bf16) return cpu::round_to<bf16>(out, inp, n);
    if (type == ElementType::f16) return cpu::round_to<fp16>(out, inp, n);
    if (out != inp) std::memcpy(out, inp, n * sizeof(float));
  }
  void convert(Tensor out, ConstTensor inp, size_t n) override {
    if (out.type() == inp.type()) {
      if (out.data() != inp.data()) std::memcpy(out.data(), inp.data(), n * element_bytes(out.type()));
      return;
    }
    on_element(out, [&](auto o) {
      on_element(inp, [&](auto i) { cpu::convert(out.as<decltype(o)>(), inp.as<decltype(i)>(), n); });
    });
  }

  void convert_saturating(Tensor out, ConstTensor inp, size_t n, unsigned* saturated) override {
    on_element(out, [&](auto o) {
      on_element(inp, [&](auto i) {
        *saturated += static_cast<unsigned>(cpu::convert_saturating(out.as<decltype(o)>(), inp.as<decltype(i)>(), n));
      });
    });
  }
  void encoder_forward(Tensor out, const int32_t* tokens, const float* wte, const float* wpe,
                       int B, int T, int C) override {
    cpu::encoder_forward(out.as_f32(), tokens, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, ConstTensor dout, const int32_t* tokens,
                        int B, int T, int C) override {
    cpu::encoder_backward(dwte, dwpe, dout.as_f32(), tokens, B, T, C);
  }
  void layernorm_forward(Tensor out, float* mean, float* rstd, ConstTensor inp,
                         ConstTensor weight, ConstTensor bias, int N, int C) override {
    cpu::layernorm_forward(out.as_f32(), mean, rstd, inp.as_f32(), weight.as_f32(), bias.as_f32(), N, C);
  }
  void layernorm_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout,
                          ConstTensor inp, ConstTensor weight, const float* mean,
                          const float* rstd, int N, int C) override {
    cpu::layernorm_backward(dinp.as_f32(), dweight, dbias, dout.as_f32(), inp.as_f32(), weight.as_f32(), mean, rstd,
                            N, C);
  }
  void matmul_forward(Tensor out, ConstTensor inp, ConstTensor weight, ConstTensor bias,
                      int N, int C, int OC) override {
    cpu::matmul_forward(out.as_f32(), inp.as_f32(), weight.as_f32(), bias.as_f32(), N, C, OC);
  }
  void matmul_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout,
                       ConstTensor inp, ConstTensor weight, int N, int C, int OC) override {
    cpu::matmul_backward(dinp.as_f32(), dweight, dbias, dout.as_f32(), inp.as_f32(), weight.as_f32(), N, C, OC);
  }
  AttentionPath attention_path(int T) const override { return cpu_attention_path(T); }
  void attention_forward(Tensor out, float* saved, ConstTensor qkv, int B, int T, AttentionHeads heads) override {
    cpu::attention_forward(attention_path(T), out.as_f32(), saved, qkv.as_f32(), B, T, heads);
  }
  void attention_backward(Tensor dqkv, ConstTensor dout, ConstTensor qkv, ConstTensor out,
                          const float* saved, int B, int T, AttentionHeads heads) override {
    cpu::attention_backward(attention_path(T), dqkv.as_f32(), dout.as_f32(), qkv.as_f32(), out.as_f32(), saved, B, T,
                            heads);
  }
  void attention_decode(Tensor out, Tensor k_cache, Tensor v_cache, ConstTensor qkv_new, int B, int Tn, int T0,
                        int Tmax, AttentionHeads heads) override {
    cpu::attention_decode(out.as_f32(), k_cache.as_f32(), v_cache.as_f32(), qkv_new.as_f32(), B, Tn, T0, Tmax, heads);
  }
  void gelu_forward(Tensor out, ConstTensor inp, size_t n) override { cpu::gelu_forward(out.as_f32(), inp.as_f32(),
                    n); }
  void gelu_backward(Tensor dinp, ConstTensor inp, ConstTensor dout, size_t n) override {
    cpu::gelu_backward(dinp.as_f32(), inp.as_f32(), dout.as_f32(), n);
  }
  void residual_forward(Tensor out, ConstTensor a, ConstTensor b, size_t n) override {
    cpu::residual_forward(out.as_f32(), a.as_f32(), b.as_f32(), n);
  }
  void rmsnorm_forward(Tensor out, float* rstd, ConstTensor inp, ConstTensor weight, int N, int C, float eps) override {
    cpu::rmsnorm_forward(out.as_f32(), rstd, inp.as_f32(), weight.as_f32(), N, C, eps);
  }
  void rmsnorm_backward(Tensor dinp, float* dweight, ConstTensor dout, ConstTensor inp, ConstTensor weight,
                        const float* rstd, int N, int C) override {
    cpu::rmsnorm_backward(dinp.as_f32(), dweight, dout.as_f32(), inp.as_f32(), weight.as_f32(), rstd, N, C);
  }
  void rotary_forward(Tensor qkv, const float* inv_freq, int B, int T, int T0, AttentionHeads heads) override {
    cpu::rotary_forward(qkv.as_f32(), inv_freq, B, T, T0, heads.NH, heads.NKV, heads.hs);
  }
  void rotary_backward(Tensor dqkv, const float* inv_freq, int B, int T, int T0, AttentionHeads heads) override {
    cpu::rotary_backward(dqkv.as_f32(), inv_freq, B, T, T0, heads.NH, heads.NKV, heads.hs);
  }
  void swiglu_forward(Tensor out, ConstTensor inp, int N, int FC) override {
    cpu::swiglu_forward(out.as_f32(), inp.as_f32(), N, FC);
  }
  void swiglu_backward(Tensor dinp, ConstTensor inp, ConstTensor dout, int N, int FC) override {
    cpu::swiglu_backward(dinp.as_f32(), inp.as_f32(), dout.as_f32(), N, FC);
  }
  void crossentropy_forward_backward(float* sample_losses, Tensor logits, const int32_t* targets,
                                     int B, int T, int V, int Vp, float dlogits_scale) override {
    cpu::crossentropy_forward_backward(sample_losses, logits.as_f32(), targets, B, T, V, Vp, dlogits_scale);
  }
  void accumulate_sum(double* total, const float* x, size_t n) override {
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += x[i];
    *total += sum;
  }
  double sum_of_squares(const float* x, size_t n) override { return cpu::sum_of_squares(x, n); }
  void adamw_update(float* params, Tensor param_copies, const float* grads, float* m, float* v,
                    const AdamWSegment* segments, size_t count, const AdamWParams& hp) override {
    on_element(param_copies, [&](auto e) {
      cpu::adamw_update(params, param_copies.as<decltype(e)>(), grads, m, v, segments, count, hp.lr, hp.beta1,
                        hp.beta2, hp.eps, hp.weight_decay, hp.grad_scale, hp.step);
    });
  }

 private:
  // Runs f(E{}) with E the element type of t: float, bf16 or fp16.
  template <class T, class F>
  static void on_element(const T& t, F&& f) {
    switch (t.type()) {
      case ElementType::bf16: return f(bf16{});
      case ElementType::f16: return f(fp16{});
      default: return f(float{});
    }
  }

  static void* aligned(size_t bytes) {
    // cudaMalloc's 256-byte alignment (64 would do for AVX loads): the kernel interpreter's
    // sectors and lines per request (kernels/simt/profile.hpp) are then the GPU's, whatever the
    // heap gives. std::aligned_alloc needs a multiple of the alignment.
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }

  mutable std::mutex counted_mutex_;  // buffers may be made and freed on any thread
  std::unordered_map<void*, size_t> counted_;  // device allocations and their sizes
  size_t held_ = 0, peak_ = 0;
  const size_t limit_;  // 0: none
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(size_t device_memory_bytes) {
  return std::make_unique<CpuBackend>(device_memory_bytes);
}

}  // namespace eth::kernels

#include "kernels/bf16_rounding_backend.hpp"

#include <cassert>
#include <utility>

#include "kernels/forwarding_backend.hpp"

namespace eth::kernels {
namespace {

class Bf16RoundingBackend final : public ForwardingBackend {
 public:
  explicit Bf16RoundingBackend(std::unique_ptr<Backend> inner) : ForwardingBackend(*inner), owned_(std::move(inner)) {
    assert(owned_->precision() == Precision::fp32);
  }
  ~Bf16RoundingBackend() override {
    for (Scratch& s : scratch_) inner_.release(s.data);
  }
  Bf16RoundingBackend(const Bf16RoundingBackend&) = delete;
  Bf16RoundingBackend& operator=(const Bf16RoundingBackend&) = delete;

  std::string name() const override { return inner_.name() + "-bf16"; }
  Precision precision() const override { return Precision::bf16; }
  std::string precision_path() const override {
    return "bf16 (" + std::string(inner_.host_addressable() ? "CPU twin" : "no bf16 kernels") +
           ": fp32 compute, rounded to bf16 at the storage points)";
  }

  void encoder_forward(Tensor out, const int32_t* tokens, ConstTensor wte, ConstTensor wpe, int B, int T,
                       int C) override {
    // out = bf16(wte)[token] + bf16(wpe)[t], in fp32 as the kernel adds them, then rounded. The
    // call does not say how many rows wte has, and which it reads is known on the device only:
    // so the word rows are gathered exactly (plus a zero position table), rounded, and the
    // rounded positions added per sample.
    float* zeros = scratch(1, rows(T, C));
    inner_.fill_zero(zeros, rows(T, C));
    inner_.encoder_forward(out, tokens, wte, zeros, B, T, C);
    round(out.as_f32(), rows(B * T, C));
    const float* positions = param(0, wpe.as_f32(), rows(T, C));
    for (int b = 0; b < B; b++) {
      float* sample = out.as_f32() + rows(b * T, C);
      inner_.residual_forward(sample, sample, positions, rows(T, C));
    }
    round(out.as_f32(), rows(B * T, C));
  }
  void layernorm_forward(Tensor out, float* mean, float* rstd, ConstTensor inp, ConstTensor weight,
                         ConstTensor bias, int N, int C) override {
    inner_.layernorm_forward(out, mean, rstd, inp, param(0, weight.as_f32(), size_t(C)), param(1, bias.as_f32(),
                             size_t(C)), N, C);
    round(out.as_f32(), rows(N, C));
  }
  void layernorm_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                          ConstTensor weight, const float* mean, const float* rstd, int N, int C) override {
    inner_.layernorm_backward(dinp, dweight, dbias, dout, inp, param(0, weight.as_f32(), size_t(C)), mean, rstd, N, C);
    round(dinp.as_f32(), rows(N, C));  // the residual stream's gradient: bf16 read, fp32 added, bf16 stored
  }
  void matmul_forward(Tensor out, ConstTensor inp, ConstTensor weight, ConstTensor bias, int N, int C,
                      int OC) override {
    inner_.matmul_forward(out, inp, param(0, weight.as_f32(), rows(OC, C)), param(1, bias.as_f32(), size_t(OC)), N, C,
                          OC);
    round(out.as_f32(), rows(N, OC));
  }
  void matmul_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                       ConstTensor weight, int N, int C, int OC) override {
    inner_.matmul_backward(dinp, dweight, dbias, dout, inp, param(0, weight.as_f32(), rows(OC, C)), N, C, OC);
    round(dinp.as_f32(), rows(N, C));
  }
  void attention_forward(Tensor out, float* saved, ConstTensor qkv, int B, int T, int C, int NH) override {
    // saved stays fp32: lse is a softmax statistic, and the materialised path's probabilities
    // are what the blocked backward recomputes in fp32 from the bf16 q and k.
    inner_.attention_forward(out, saved, qkv, B, T, C, NH);
    round(out.as_f32(), rows(B * T, C));
  }
  void attention_backward(Tensor dqkv, ConstTensor dout, ConstTensor qkv, ConstTensor out, const float* saved,
                          int B, int T, int C, int NH) override {
    inner_.attention_backward(dqkv, dout, qkv, out, saved, B, T, C, NH);
    round(dqkv.as_f32(), rows(B * T, 3 * C));
  }
  void attention_decode(Tensor out, Tensor k_cache, Tensor v_cache, ConstTensor qkv_new, int B, int Tn, int T0,
                        int Tmax, int C, int NH) override {
    // The caches take copies of qkv's bf16 keys and values: they hold bf16 values unrounded.
    inner_.attention_decode(out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH);
    round(out.as_f32(), rows(B * Tn, C));
  }
  void gelu_forward(Tensor out, ConstTensor inp, size_t n) override {
    inner_.gelu_forward(out, inp, n);
    round(out.as_f32(), n);
  }
  void gelu_backward(Tensor dinp, ConstTensor inp, ConstTensor dout, size_t n) override {
    inner_.gelu_backward(dinp, inp, dout, n);
    round(dinp.as_f32(), n);
  }
  void residual_forward(Tensor out, ConstTensor a, ConstTensor b, size_t n) override {
    inner_.residual_forward(out, a, b, n);
    round(out.as_f32(), n);
  }
  void crossentropy_forward_backward(float* sample_losses, Tensor logits, const int32_t* targets, int B, int T,
                                     int V, int Vp, float dlogits_scale) override {
    // The loss is fp32 from the bf16 logits; the dlogits that overwrite them are stored bf16.
    inner_.crossentropy_forward_backward(sample_losses, logits, targets, B, T, V, Vp, dlogits_scale);
    if (dlogits_scale != 0) round(logits.as_f32(), rows(B * T, Vp));
  }

 private:
  static size_t rows(int n, int width) { return static_cast<size_t>(n) * static_cast<size_t>(width); }

  void round(float* x, size_t n) { inner_.round_to_bf16(x, x, n); }

  // The bf16 copy of n floats of parameters p, in scratch slot `slot` (a call reads at most two
  // parameter tensors: weight and bias), or null for null. Rounding when read gives exactly the
  // numbers of a bf16 copy refreshed by each optimizer step, without tracking which rank's step
  // (or which shard's broadcast) last wrote which parameter. The slot is reused by the next
  // call: safe, since the stream runs in order.
  const float* param(int slot, const float* p, size_t n) {
    if (p == nullptr) return nullptr;
    float* copy = scratch(slot, n);
    inner_.round_to_bf16(copy, p, n);
    return copy;
  }
  // Scratch slot `slot`, grown to at least n floats (the first step's calls size it for good).
  float* scratch(int slot, size_t n) {
    Scratch& s = scratch_[slot];
    if (s.floats < n) {
      inner_.release(s.data);
      s.data = static_cast<float*>(inner_.allocate(n * sizeof(float)));
      s.floats = n;
    }
    return s.data;
  }

  struct Scratch {
    float* data = nullptr;
    size_t floats = 0;
  };
  std::unique_ptr<Backend> owned_;
  Scratch scratch_[2];
};

}  // namespace

std::unique_ptr<Backend> make_bf16_rounding_backend(std::unique_ptr<Backend> inner) {
  return std::make_unique<Bf16RoundingBackend>(std::move(inner));
}

}  // namespace eth::kernels

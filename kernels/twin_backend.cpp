#include "kernels/twin_backend.hpp"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <initializer_list>
#include <utility>

#include "kernels/forwarding_backend.hpp"

namespace eth::kernels {
namespace {

size_t rows(size_t n, size_t width) { return n * width; }

// Bytes of a working copy of n fp32 values: each starts on a 16-byte boundary, as the
// stage's tensors do (vector loads and cp.async need it).
size_t f32(size_t n) { return (n * sizeof(float) + 15) / 16 * 16; }

// Each op's working copies, in bytes: its fp32 outputs and inputs (parameters included). One
// formula per op, for the op itself and for twin_workspace_bytes.
namespace need {
size_t encoder_forward(size_t N, size_t T, size_t C) { return f32(rows(N, C)) + 2 * f32(rows(T, C)); }
size_t encoder_backward(size_t N, size_t C) { return f32(rows(N, C)); }
size_t layernorm_forward(size_t N, size_t C) { return 2 * f32(rows(N, C)) + 2 * f32(C); }
size_t layernorm_backward(size_t N, size_t C) { return 3 * f32(rows(N, C)) + f32(C); }
size_t matmul_forward(size_t N, size_t C, size_t OC, bool bias) {
  return f32(rows(N, OC)) + f32(rows(N, C)) + f32(rows(OC, C)) + (bias ? f32(OC) : 0);
}
size_t matmul_backward(size_t N, size_t C, size_t OC) { return 2 * f32(rows(N, C)) + f32(rows(N, OC)) + f32(rows(OC, C)); }
size_t matmul_dgelu_backward(size_t N, size_t C, size_t OC) { return matmul_backward(N, C, OC) + f32(rows(N, C)); }
size_t attention_forward(size_t N, AttentionHeads h) { return f32(rows(N, h.out_row())) + f32(rows(N, h.qkv_row())); }
size_t attention_backward(size_t N, AttentionHeads h) {
  return 2 * f32(rows(N, h.out_row())) + 2 * f32(rows(N, h.qkv_row()));
}
size_t attention_decode(size_t B, size_t Tn, size_t Tmax, AttentionHeads h) {
  const size_t cache = rows(rows(B, Tmax), static_cast<size_t>(h.NKV) * h.hs);
  return f32(rows(B * Tn, h.out_row())) + 2 * f32(cache) + f32(rows(B * Tn, h.qkv_row()));
}
size_t gelu_forward(size_t n) { return 2 * f32(n); }
size_t gelu_backward(size_t n) { return 3 * f32(n); }
size_t residual_forward(size_t n) { return 3 * f32(n); }
size_t rotary(size_t n) { return f32(n); }
size_t rmsnorm_forward(size_t N, size_t C) { return layernorm_forward(N, C) - f32(C); }
size_t rmsnorm_backward(size_t N, size_t C) { return layernorm_backward(N, C); }
size_t swiglu_forward(size_t N, size_t FC) { return f32(rows(N, FC)) + f32(rows(N, 2 * FC)); }
size_t swiglu_backward(size_t N, size_t FC) { return 2 * f32(rows(N, 2 * FC)) + f32(rows(N, FC)); }
size_t crossentropy(size_t N, size_t Vp) { return f32(rows(N, Vp)); }
}  // namespace need

class TwinBackend final : public ForwardingBackend {
 public:
  TwinBackend(Backend& inner, std::unique_ptr<Backend> owned, Precision precision)
      : ForwardingBackend(inner), owned_(std::move(owned)), precision_(precision), storage_(storage_type(precision)) {
    assert(storage_ != ElementType::f32);
  }
  ~TwinBackend() override { inner_.release(workspace_); }
  TwinBackend(const TwinBackend&) = delete;
  TwinBackend& operator=(const TwinBackend&) = delete;

  std::string name() const override { return inner_.name() + "-" + precision_name(precision_); }
  Precision precision() const override { return precision_; }
  Arithmetic arithmetic() const override { return Arithmetic::fp32; }
  std::string precision_path() const override {
    const std::string p = precision_name(precision_);
    if (inner_.ops_device() == OpsDevice::host) return p + " (CPU twin: " + p + " storage, fp32 compute)";
    // Made only where the rank's path is in fp32 arithmetic (backend_select.cpp).
    return p + " (twin over the fp32 kernels of " + inner_.name() + ": " + p + " storage, fp32 compute; the path is " +
           p + " in fp32 arithmetic: " +
           (precision_ == Precision::bf16 ? "a device type without bf16 units, or ETH_BF16_KERNELS=0)"
                                          : "a device type without fp16 tensor cores)");
  }
  // Owning its inner backend, the twin computes every op: the working copies of all of them, and
  // the inner backend's own workspace. As the fallback of a native bf16 backend
  // (make_twin_fallback) the copies of those fallbacks only: that backend reserves its own.
  void reserve_workspace(const StageShape& shape) override {
    workspace(twin_workspace_bytes(shape, owned_ ? Arithmetic::fp32 : inner_.arithmetic()));
    if (owned_) inner_.reserve_workspace(shape);
  }

  void encoder_forward(Tensor out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                       int C) override {
    // wte and wpe are the fp32 masters, read as their 16-bit copies.
    // out = E(wte)[token] + E(wpe)[t], in fp32 as the kernel adds them, then rounded. The
    // call does not say how many rows wte has, and which it reads is known on the device only:
    // so the word rows are gathered exactly (plus a zero position table) and rounded, which is
    // gathering rounded rows, and the rounded positions are added per sample.
    const size_t N = rows(B, T);
    Working w(*this, need::encoder_forward(N, T, C));
    float* o = w.output(out, rows(N, C));
    float* zeros = w.space(rows(T, C));
    inner_.fill_zero(zeros, rows(T, C));
    inner_.encoder_forward(o, tokens, wte, zeros, B, T, C);
    round(o, rows(N, C));
    if (wpe == nullptr) return store(out, o, rows(N, C));  // rotary positions: the word rows alone
    const float* positions = w.in(wpe, rows(T, C));
    for (int b = 0; b < B; b++) inner_.residual_forward(o + rows(b * T, C), o + rows(b * T, C), positions, rows(T, C));
    store(out, o, rows(N, C));
  }
  void encoder_backward(float* dwte, float* dwpe, ConstTensor dout, const int32_t* tokens, int B, int T,
                        int C) override {
    const size_t N = rows(B, T);
    Working w(*this, need::encoder_backward(N, C));
    inner_.encoder_backward(dwte, dwpe, w.in(dout, rows(N, C)), tokens, B, T, C);
  }
  void layernorm_forward(Tensor out, float* mean, float* rstd, ConstTensor inp, ConstTensor weight,
                         ConstTensor bias, int N, int C) override {
    Working w(*this, need::layernorm_forward(N, C));
    float* o = w.output(out, rows(N, C));
    inner_.layernorm_forward(o, mean, rstd, w.in(inp, rows(N, C)), w.in(weight, C), w.in(bias, C), N, C);
    store(out, o, rows(N, C));
  }
  void layernorm_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                          ConstTensor weight, const float* mean, const float* rstd, int N, int C) override {
    // The residual stream's gradient: 16 bits read, fp32 added, 16 bits stored.
    Working w(*this, need::layernorm_backward(N, C));
    float* d = w.accumulated(dinp, rows(N, C));
    inner_.layernorm_backward(d, dweight, dbias, w.in(dout, rows(N, C)), w.in(inp, rows(N, C)), w.in(weight, C),
                              mean, rstd, N, C);
    store(dinp, d, rows(N, C));
  }
  void matmul_forward(Tensor out, ConstTensor inp, ConstTensor weight, ConstTensor bias, int N, int C,
                      int OC) override {
    Working w(*this, need::matmul_forward(N, C, OC, bool(bias)));
    float* o = w.output(out, rows(N, OC));
    inner_.matmul_forward(o, w.in(inp, rows(N, C)), w.in(weight, rows(OC, C)), w.in(bias, OC), N, C, OC);
    store(out, o, rows(N, OC));
  }
  void matmul_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                       ConstTensor weight, int N, int C, int OC) override {
    Working w(*this, need::matmul_backward(N, C, OC));
    float* d = w.output(dinp, rows(N, C));
    inner_.matmul_backward(d, dweight, dbias, w.in(dout, rows(N, OC)), w.in(inp, rows(N, C)),
                           w.in(weight, rows(OC, C)), N, C, OC);
    store(dinp, d, rows(N, C));
  }
  void matmul_gelu_forward(Tensor out, Tensor pre_gelu, ConstTensor inp, ConstTensor weight, ConstTensor bias, int N,
                           int C, int OC) override {
    // As the fused kernel: GELU of the fp32 sum, which is stored (rounded) as pre_gelu first.
    Working w(*this, need::matmul_forward(N, C, OC, bool(bias)));
    const size_t n = rows(N, OC);
    float* o = w.output(out, n);
    inner_.matmul_forward(o, w.in(inp, rows(N, C)), w.in(weight, rows(OC, C)), w.in(bias, OC), N, C, OC);
    narrow(pre_gelu, o, n);
    inner_.gelu_forward(o, o, n);
    store(out, o, n);
  }
  void matmul_dgelu_backward(Tensor dpre_gelu, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                             ConstTensor weight, ConstTensor pre_gelu, int N, int C, int OC) override {
    // As the fused kernel: GELU's backward on the fp32 sum, then one rounding.
    Working w(*this, need::matmul_dgelu_backward(N, C, OC));
    const size_t n = rows(N, C);
    float* d = w.output(dpre_gelu, n);
    inner_.matmul_backward(d, dweight, dbias, w.in(dout, rows(N, OC)), w.in(inp, n), w.in(weight, rows(OC, C)), N, C,
                           OC);
    inner_.gelu_backward(d, w.in(pre_gelu, n), d, n);
    store(dpre_gelu, d, n);
  }
  void residual_layernorm_forward(Tensor residual, Tensor out, float* mean, float* rstd, ConstTensor a, ConstTensor b,
                                  ConstTensor weight, ConstTensor bias, int N, int C) override {
    Backend::residual_layernorm_forward(residual, out, mean, rstd, a, b, weight, bias, N, C);  // this path's two ops
  }
  void residual_rmsnorm_forward(Tensor residual, Tensor out, float* rstd, ConstTensor a, ConstTensor b,
                                ConstTensor weight, int N, int C, float eps) override {
    Backend::residual_rmsnorm_forward(residual, out, rstd, a, b, weight, N, C, eps);  // this path's two ops
  }
  void attention_forward(Tensor out, float* saved, ConstTensor qkv, int B, int T, AttentionHeads heads) override {
    // saved stays fp32: lse is a softmax statistic, and the materialised path's probabilities
    // are what the blocked backward recomputes in fp32 from the 16-bit q and k.
    const size_t N = rows(B, T);
    Working w(*this, need::attention_forward(N, heads));
    float* o = w.output(out, rows(N, heads.out_row()));
    inner_.attention_forward(o, saved, w.in(qkv, rows(N, heads.qkv_row())), B, T, heads);
    store(out, o, rows(N, heads.out_row()));
  }
  void attention_backward(Tensor dqkv, ConstTensor dout, ConstTensor qkv, ConstTensor out, const float* saved,
                          int B, int T, AttentionHeads heads) override {
    const size_t N = rows(B, T), out_n = rows(N, heads.out_row()), qkv_n = rows(N, heads.qkv_row());
    Working w(*this, need::attention_backward(N, heads));
    float* d = w.output(dqkv, qkv_n);
    inner_.attention_backward(d, w.in(dout, out_n), w.in(qkv, qkv_n), w.in(out, out_n), saved, B, T, heads);
    store(dqkv, d, qkv_n);
  }
  void attention_decode(Tensor out, Tensor k_cache, Tensor v_cache, ConstTensor qkv_new, int B, int Tn, int T0,
                        int Tmax, AttentionHeads heads) override {
    // The caches take copies of qkv's keys and values: values of the storage type, stored without
    // rounding.
    Working w(*this, need::attention_decode(B, Tn, Tmax, heads));
    const size_t cache = rows(rows(B, Tmax), static_cast<size_t>(heads.NKV) * heads.hs);
    float* o = w.output(out, rows(rows(B, Tn), heads.out_row()));
    float* k = w.accumulated(k_cache, cache);
    float* v = w.accumulated(v_cache, cache);
    inner_.attention_decode(o, k, v, w.in(qkv_new, rows(rows(B, Tn), heads.qkv_row())), B, Tn, T0, Tmax, heads);
    store(out, o, rows(rows(B, Tn), heads.out_row()));
    store(k_cache, k, cache);
    store(v_cache, v, cache);
  }
  void gelu_forward(Tensor out, ConstTensor inp, size_t n) override {
    Working w(*this, need::gelu_forward(n));
    float* o = w.output(out, n);
    inner_.gelu_forward(o, w.in(inp, n), n);
    store(out, o, n);
  }
  void gelu_backward(Tensor dinp, ConstTensor inp, ConstTensor dout, size_t n) override {
    // dinp may be dout (lib/model/stage.cpp runs it in place): dout is widened before d is written.
    Working w(*this, need::gelu_backward(n));
    const float* dout32 = w.in(dout, n);
    float* d = w.output(dinp, n);
    inner_.gelu_backward(d, w.in(inp, n), dout32, n);
    store(dinp, d, n);
  }
  void residual_forward(Tensor out, ConstTensor a, ConstTensor b, size_t n) override {
    Working w(*this, need::residual_forward(n));
    const float* a32 = w.in(a, n);
    const float* b32 = w.in(b, n);
    float* o = w.output(out, n);
    inner_.residual_forward(o, a32, b32, n);
    store(out, o, n);
  }
  void rmsnorm_forward(Tensor out, float* rstd, ConstTensor inp, ConstTensor weight, int N, int C, float eps) override {
    const size_t n = rows(N, C);
    Working w(*this, need::rmsnorm_forward(N, C));
    const float* in32 = w.in(inp, n);
    const float* w32 = w.in(weight, C);
    float* o = w.output(out, n);
    inner_.rmsnorm_forward(o, rstd, in32, w32, N, C, eps);
    store(out, o, n);
  }
  void rmsnorm_backward(Tensor dinp, float* dweight, ConstTensor dout, ConstTensor inp, ConstTensor weight,
                        const float* rstd, int N, int C) override {
    const size_t n = rows(N, C);
    Working w(*this, need::rmsnorm_backward(N, C));
    float* d = w.accumulated(dinp, n);
    inner_.rmsnorm_backward(d, dweight, w.in(dout, n), w.in(inp, n), w.in(weight, C), rstd, N, C);
    store(dinp, d, n);
  }
  void rotary_forward(Tensor qkv, const float* inv_freq, int B, int T, int T0, AttentionHeads heads) override {
    rotate(qkv, inv_freq, B, T, T0, heads, &Backend::rotary_forward);
  }
  void rotary_backward(Tensor dqkv, const float* inv_freq, int B, int T, int T0, AttentionHeads heads) override {
    rotate(dqkv, inv_freq, B, T, T0, heads, &Backend::rotary_backward);
  }
  void swiglu_forward(Tensor out, ConstTensor inp, int N, int FC) override {
    const size_t n = rows(N, FC);
    Working w(*this, need::swiglu_forward(N, FC));
    const float* in32 = w.in(inp, 2 * n);
    float* o = w.output(out, n);
    inner_.swiglu_forward(o, in32, N, FC);
    store(out, o, n);
  }
  void swiglu_backward(Tensor dinp, ConstTensor inp, ConstTensor dout, int N, int FC) override {
    const size_t n = rows(N, FC);
    Working w(*this, need::swiglu_backward(N, FC));
    const float* in32 = w.in(inp, 2 * n);
    const float* dout32 = w.in(dout, n);
    float* d = w.output(dinp, 2 * n);
    inner_.swiglu_backward(d, in32, dout32, N, FC);
    store(dinp, d, 2 * n);
  }
  void crossentropy_forward_backward(float* sample_losses, Tensor logits, const int32_t* targets, int B, int T,
                                     int V, int Vp, float dlogits_scale) override {
    // The loss is fp32 from the 16-bit logits; the dlogits that overwrite them are stored 16-bit.
    const size_t n = rows(rows(B, T), Vp);
    Working w(*this, need::crossentropy(rows(B, T), Vp));
    float* l = w.accumulated(logits, n);
    inner_.crossentropy_forward_backward(sample_losses, l, targets, B, T, V, Vp, dlogits_scale);
    if (dlogits_scale != 0) store(logits, l, n);
  }

 private:
  // One op's working copies, taken in order from the workspace, which is first grown to the
  // op's need (`bytes`). An fp32 Tensor needs no copy where it is written: the op writes it and
  // store() rounds it in place. The workspace is reused by the next op: safe, since the stream
  // runs in order.
  class Working {
   public:
    Working(TwinBackend& b, size_t bytes) : b_(b), next_(b.workspace(bytes)), end_(next_ + bytes) {}
    float* space(size_t n) { return static_cast<float*>(take(f32(n))); }
    // An input in fp32, or null for null: 16 bits widened exactly; fp32 rounded to the storage
    // type (a master parameter read as its 16-bit copy, or fp32 storage holding such values:
    // unchanged then).
    const float* in(ConstTensor t, size_t n) {
      if (!t) return nullptr;
      float* p = space(n);
      if (t.type() != ElementType::f32)
        b_.inner_.convert(p, t, n);
      else
        b_.inner_.round_to(b_.storage_, p, t.as_f32(), n);
      return p;
    }
    // Where the op writes `out` in fp32.
    float* output(Tensor out, size_t n) { return out.type() == ElementType::f32 ? out.as_f32() : space(n); }
    // Where the op reads and writes `t` in fp32 (it accumulates into it, or updates it in place).
    float* accumulated(Tensor t, size_t n) {
      if (t.type() == ElementType::f32) return t.as_f32();
      float* p = space(n);
      b_.inner_.convert(p, t, n);
      return p;
    }

   private:
    void* take(size_t bytes) {
      std::byte* p = next_;
      next_ += bytes;
      assert(next_ <= end_);
      return p;
    }
    TwinBackend& b_;
    std::byte* next_;
    std::byte* end_;
  };

  void round(float* x, size_t n) { inner_.round_to(storage_, x, x, n); }
  // An op's fp32 result r (from Working::output or accumulated) stored into `out` in 16 bits.
  void store(Tensor out, float* r, size_t n) {
    if (out.type() == ElementType::f32)
      round(r, n);
    else
      inner_.convert(out, r, n);
  }
  // An fp32 value r stored rounded into `out`, another buffer, r left as it is.
  void narrow(Tensor out, const float* r, size_t n) {
    if (out.type() == ElementType::f32)
      inner_.round_to(storage_, out.as_f32(), r, n);
    else
      inner_.convert(out, r, n);
  }
  // The workspace, grown to at least `bytes` (reserve_workspace sizes it before the first step).
  // A rotation (forward or backward) of the stored rows in place: widened, turned in fp32, narrowed.
  void rotate(Tensor t, const float* inv_freq, int B, int T, int T0, AttentionHeads heads,
              void (Backend::*op)(Tensor, const float*, int, int, int, AttentionHeads)) {
    const size_t n = rows(rows(B, T), heads.qkv_row());
    Working w(*this, need::rotary(n));
    float* x = w.accumulated(t, n);
    (inner_.*op)(x, inv_freq, B, T, T0, heads);
    store(t, x, n);
  }

  std::byte* workspace(size_t bytes) {
    if (workspace_bytes_ < bytes) {
      inner_.release(workspace_);
      workspace_ = static_cast<std::byte*>(inner_.allocate(bytes));
      workspace_bytes_ = bytes;
    }
    return workspace_;
  }

  std::unique_ptr<Backend> owned_;  // the inner backend where this twin owns it
  Precision precision_;             // bf16 or fp16
  ElementType storage_;             // its element type
  std::byte* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_twin_backend(std::unique_ptr<Backend> inner, Precision precision) {
  assert(inner->precision() == Precision::fp32);
  Backend& computes = *inner;
  return std::make_unique<TwinBackend>(computes, std::move(inner), precision);
}

std::unique_ptr<Backend> make_twin_fallback(Backend& inner) {
  return std::make_unique<TwinBackend>(inner, nullptr, inner.precision());
}

size_t twin_workspace_bytes(const StageShape& s, Arithmetic arithmetic) {
  const size_t N = rows(s.B, s.T), C = static_cast<size_t>(s.C), Vp = static_cast<size_t>(s.Vp);
  const size_t QKV = s.heads.qkv_row(), Q = s.heads.out_row(), F = static_cast<size_t>(s.fc),
               FA = static_cast<size_t>(s.fc_act);
  if (arithmetic == Arithmetic::bf16 || arithmetic == Arithmetic::fp16) {
    // A native 16-bit backend's fallbacks (kernels/gpu_ops/gpu_ops_backend.hpp): the fused fc ops
    // at widths GELU's epilogue does not take; attention at head sizes the flash kernels do not
    // take, and in fp16 at every one, since an fp16 backend on compute capability 7.x (no
    // mma.m16n8k16) runs it on the twin and the arithmetic does not say which device this is.
    const bool fp16 = arithmetic == Arithmetic::fp16;
    size_t bytes = 0;
    if (!s.swiglu && !gelu_epilogue_width(s.fc)) bytes = std::max(bytes, need::matmul_forward(N, C, F, true));
    if (!s.swiglu && !gelu_epilogue_width(s.C)) bytes = std::max(bytes, need::matmul_dgelu_backward(N, FA, C));
    if (fp16 || !flash_attention_head_size(s.heads.hs))
      bytes = std::max({bytes, need::attention_forward(N, s.heads), need::attention_backward(N, s.heads)});
    return bytes;
  }
  // A layer's ops, shapes as lib/model/stage.cpp calls them: for GPT-2 the widest is fc_proj's
  // matmul backward with dGELU ((N, 4C) in, dinp and pre_gelu, the 4C x C weight).
  size_t bytes = std::max({need::layernorm_forward(N, C), need::layernorm_backward(N, C),
                           need::matmul_forward(N, C, QKV, true), need::matmul_forward(N, Q, C, true),
                           need::matmul_forward(N, FA, C, true), need::matmul_forward(N, C, F, true),
                           need::matmul_backward(N, C, QKV), need::matmul_backward(N, Q, C),
                           need::matmul_backward(N, C, F), need::residual_forward(rows(N, C)),
                           need::attention_forward(N, s.heads), need::attention_backward(N, s.heads),
                           need::rotary(rows(N, QKV)), need::encoder_backward(s.gathered_rows, C)});
  // (RMSNorm's copies are layernorm's, less.) The MLP's: SwiGLU's ops, or the fused GELU ones.
  if (s.swiglu)
    bytes = std::max({bytes, need::matmul_backward(N, FA, C), need::swiglu_forward(N, FA), need::swiglu_backward(N, FA)});
  else
    bytes = std::max(bytes, need::matmul_dgelu_backward(N, FA, C));
  if (s.embedding)
    bytes = std::max({bytes, need::encoder_forward(N, static_cast<size_t>(s.T), C), need::encoder_backward(N, C)});
  if (s.head)
    bytes = std::max({bytes, need::matmul_forward(N, C, Vp, false), need::matmul_backward(N, C, Vp),
                      need::crossentropy(N, Vp)});
  return bytes;
}

}  // namespace eth::kernels

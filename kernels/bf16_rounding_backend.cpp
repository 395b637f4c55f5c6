#include "kernels/bf16_rounding_backend.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

#include "kernels/forwarding_backend.hpp"

namespace eth::kernels {
namespace {

size_t rows(size_t n, size_t width) { return n * width; }

// Each op's working copies, in floats: its fp32 outputs and inputs (parameters included). One
// formula per op, for the op itself and for bf16_rounding_workspace_bytes.
namespace need {
size_t encoder_forward(size_t N, size_t T, size_t C) { return rows(N, C) + 2 * rows(T, C); }
size_t encoder_backward(size_t N, size_t C) { return rows(N, C); }
size_t layernorm_forward(size_t N, size_t C) { return 2 * rows(N, C) + 2 * C; }
size_t layernorm_backward(size_t N, size_t C) { return 3 * rows(N, C) + C; }
size_t matmul_forward(size_t N, size_t C, size_t OC, bool bias) {
  return rows(N, OC) + rows(N, C) + rows(OC, C) + (bias ? OC : 0);
}
size_t matmul_backward(size_t N, size_t C, size_t OC) { return 2 * rows(N, C) + rows(N, OC) + rows(OC, C); }
size_t attention_forward(size_t N, size_t C) { return 4 * rows(N, C); }
size_t attention_backward(size_t N, size_t C) { return 8 * rows(N, C); }
size_t attention_decode(size_t B, size_t Tn, size_t Tmax, size_t C) { return 4 * rows(B * Tn, C) + 2 * rows(B * Tmax, C); }
size_t gelu_forward(size_t n) { return 2 * n; }
size_t gelu_backward(size_t n) { return 3 * n; }
size_t residual_forward(size_t n) { return 3 * n; }
size_t crossentropy(size_t N, size_t Vp) { return rows(N, Vp); }
}  // namespace need

class Bf16RoundingBackend final : public ForwardingBackend {
 public:
  explicit Bf16RoundingBackend(std::unique_ptr<Backend> inner) : ForwardingBackend(*inner), owned_(std::move(inner)) {
    assert(owned_->precision() == Precision::fp32);
  }
  ~Bf16RoundingBackend() override { inner_.release(workspace_); }
  Bf16RoundingBackend(const Bf16RoundingBackend&) = delete;
  Bf16RoundingBackend& operator=(const Bf16RoundingBackend&) = delete;

  std::string name() const override { return inner_.name() + "-bf16"; }
  Precision precision() const override { return Precision::bf16; }
  std::string precision_path() const override {
    return "bf16 (" + std::string(inner_.host_addressable() ? "CPU twin" : "no bf16 kernels") +
           ": bf16 storage, fp32 compute)";
  }

  void encoder_forward(Tensor out, const int32_t* tokens, ConstTensor wte, ConstTensor wpe, int B, int T,
                       int C) override {
    // out = bf16(wte)[token] + bf16(wpe)[t], in fp32 as the kernel adds them, then rounded. The
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
    // The residual stream's gradient: bf16 read, fp32 added, bf16 stored.
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
  void attention_forward(Tensor out, float* saved, ConstTensor qkv, int B, int T, int C, int NH) override {
    // saved stays fp32: lse is a softmax statistic, and the materialised path's probabilities
    // are what the blocked backward recomputes in fp32 from the bf16 q and k.
    const size_t N = rows(B, T);
    Working w(*this, need::attention_forward(N, C));
    float* o = w.output(out, rows(N, C));
    inner_.attention_forward(o, saved, w.in(qkv, rows(N, 3 * C)), B, T, C, NH);
    store(out, o, rows(N, C));
  }
  void attention_backward(Tensor dqkv, ConstTensor dout, ConstTensor qkv, ConstTensor out, const float* saved,
                          int B, int T, int C, int NH) override {
    const size_t N = rows(B, T);
    Working w(*this, need::attention_backward(N, C));
    float* d = w.output(dqkv, rows(N, 3 * C));
    inner_.attention_backward(d, w.in(dout, rows(N, C)), w.in(qkv, rows(N, 3 * C)), w.in(out, rows(N, C)), saved,
                              B, T, C, NH);
    store(dqkv, d, rows(N, 3 * C));
  }
  void attention_decode(Tensor out, Tensor k_cache, Tensor v_cache, ConstTensor qkv_new, int B, int Tn, int T0,
                        int Tmax, int C, int NH) override {
    // The caches take copies of qkv's bf16 keys and values: bf16 values, stored without rounding.
    Working w(*this, need::attention_decode(B, Tn, Tmax, C));
    const size_t cache = rows(rows(B, Tmax), C);
    float* o = w.output(out, rows(rows(B, Tn), C));
    float* k = w.accumulated(k_cache, cache);
    float* v = w.accumulated(v_cache, cache);
    inner_.attention_decode(o, k, v, w.in(qkv_new, rows(rows(B, Tn), 3 * C)), B, Tn, T0, Tmax, C, NH);
    store(out, o, rows(rows(B, Tn), C));
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
  void crossentropy_forward_backward(float* sample_losses, Tensor logits, const int32_t* targets, int B, int T,
                                     int V, int Vp, float dlogits_scale) override {
    // The loss is fp32 from the bf16 logits; the dlogits that overwrite them are stored bf16.
    const size_t n = rows(rows(B, T), Vp);
    Working w(*this, need::crossentropy(rows(B, T), Vp));
    float* l = w.accumulated(logits, n);
    inner_.crossentropy_forward_backward(sample_losses, l, targets, B, T, V, Vp, dlogits_scale);
    if (dlogits_scale != 0) store(logits, l, n);
  }

 private:
  // One op's fp32 working copies, taken in order from the workspace, which is first grown to
  // the op's need (`floats`). An fp32 Tensor needs no copy where it is written: the op writes it
  // and store() rounds it in place. The workspace is reused by the next op: safe, since the
  // stream runs in order.
  class Working {
   public:
    Working(Bf16RoundingBackend& b, size_t floats) : b_(b), next_(b.workspace(floats)), end_(next_ + floats) {}
    float* space(size_t n) {
      float* p = next_;
      next_ += n;
      assert(next_ <= end_);
      return p;
    }
    // An input in fp32, or null for null: bf16 widened exactly; fp32 rounded to bf16 (a master
    // parameter read as its bf16 copy, or fp32 storage holding bf16 values: unchanged then).
    const float* in(ConstTensor t, size_t n) {
      if (!t) return nullptr;
      float* p = space(n);
      if (t.type() == ElementType::bf16)
        b_.inner_.convert(p, t, n);
      else
        b_.inner_.round_to_bf16(p, t.as_f32(), n);
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
    Bf16RoundingBackend& b_;
    float* next_;
    float* end_;
  };

  void round(float* x, size_t n) { inner_.round_to_bf16(x, x, n); }
  // An op's fp32 result r (from Working::output or accumulated) stored into `out` as bf16.
  void store(Tensor out, float* r, size_t n) {
    if (out.type() == ElementType::f32)
      round(r, n);
    else
      inner_.convert(out, r, n);
  }
  // The workspace, grown to at least `floats` (a training step's first calls size it for good).
  float* workspace(size_t floats) {
    if (workspace_floats_ < floats) {
      inner_.release(workspace_);
      workspace_ = static_cast<float*>(inner_.allocate(floats * sizeof(float)));
      workspace_floats_ = floats;
    }
    return workspace_;
  }

  std::unique_ptr<Backend> owned_;
  float* workspace_ = nullptr;
  size_t workspace_floats_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_bf16_rounding_backend(std::unique_ptr<Backend> inner) {
  return std::make_unique<Bf16RoundingBackend>(std::move(inner));
}

size_t bf16_rounding_workspace_bytes(int B, int T, int C, int Vp, bool embedding, bool head, size_t gathered_rows) {
  const size_t N = rows(B, T), c = static_cast<size_t>(C), vp = static_cast<size_t>(Vp);
  // A layer's ops (shapes as lib/model/stage.cpp calls them): the widest are GELU's backward
  // (three (N, 4C) copies) and fc_proj's matmul backward ((N, 4C) in and dinp, the 4C x C weight).
  size_t floats = std::max({need::layernorm_forward(N, c), need::layernorm_backward(N, c),
                            need::matmul_forward(N, c, 3 * c, true), need::matmul_forward(N, 4 * c, c, true),
                            need::matmul_forward(N, c, 4 * c, true), need::matmul_backward(N, c, 3 * c),
                            need::matmul_backward(N, c, 4 * c), need::matmul_backward(N, 4 * c, c),
                            need::attention_forward(N, c), need::attention_backward(N, c),
                            need::gelu_forward(4 * rows(N, c)), need::gelu_backward(4 * rows(N, c)),
                            need::residual_forward(rows(N, c))});
  if (embedding)
    floats = std::max({floats, need::encoder_forward(N, static_cast<size_t>(T), c), need::encoder_backward(N, c)});
  floats = std::max(floats, need::encoder_backward(gathered_rows, c));
  if (head)
    floats = std::max({floats, need::matmul_forward(N, c, vp, false), need::matmul_backward(N, c, vp),
                       need::crossentropy(N, vp)});
  return floats * sizeof(float);
}

}  // namespace eth::kernels

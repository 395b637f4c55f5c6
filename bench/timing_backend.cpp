#include "bench/timing_backend.hpp"

namespace eth::bench {
namespace {

std::string matmul_key(const char* op, int C, int OC) {
  return std::string(op) + " (" + std::to_string(C) + "->" + std::to_string(OC) + ")";
}

}  // namespace

void TimingBackend::copy_to_device(void* dst, const void* src, size_t bytes) {
  timed("copy", [&] { inner_.copy_to_device(dst, src, bytes); });
}
void TimingBackend::copy_to_host(void* dst, const void* src, size_t bytes) {
  timed("copy", [&] { inner_.copy_to_host(dst, src, bytes); });
}
void TimingBackend::copy_to_device_async(void* dst, const void* src, size_t bytes) {
  timed("copy", [&] { inner_.copy_to_device_async(dst, src, bytes); });
}
void TimingBackend::copy_to_host_async(void* dst, const void* src, size_t bytes) {
  timed("copy", [&] { inner_.copy_to_host_async(dst, src, bytes); });
}
void TimingBackend::copy(void* dst, const void* src, size_t bytes) {
  timed("copy", [&] { inner_.copy(dst, src, bytes); });
}
void TimingBackend::convert(Tensor out, ConstTensor inp, size_t n) {
  timed("convert", [&] { inner_.convert(out, inp, n); });
}
void TimingBackend::fill_zero(Tensor x, size_t n) {
  timed("fill_zero", [&] { inner_.fill_zero(x, n); });
}
void TimingBackend::encoder_forward(Tensor out, const int32_t* tokens, ConstTensor wte, ConstTensor wpe,
                                    int B, int T, int C) {
  timed("encoder_forward", [&] { inner_.encoder_forward(out, tokens, wte, wpe, B, T, C); });
}
void TimingBackend::encoder_backward(float* dwte, float* dwpe, ConstTensor dout, const int32_t* tokens,
                                     int B, int T, int C) {
  timed("encoder_backward", [&] { inner_.encoder_backward(dwte, dwpe, dout, tokens, B, T, C); });
}
void TimingBackend::layernorm_forward(Tensor out, float* mean, float* rstd, ConstTensor inp,
                                      ConstTensor weight, ConstTensor bias, int N, int C) {
  timed("layernorm_forward", [&] { inner_.layernorm_forward(out, mean, rstd, inp, weight, bias, N, C); });
}
void TimingBackend::layernorm_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout,
                                       ConstTensor inp, ConstTensor weight, const float* mean,
                                       const float* rstd, int N, int C) {
  timed("layernorm_backward",
        [&] { inner_.layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C); });
}
void TimingBackend::matmul_forward(Tensor out, ConstTensor inp, ConstTensor weight, ConstTensor bias,
                                   int N, int C, int OC) {
  timed(matmul_key("matmul_forward", C, OC), [&] { inner_.matmul_forward(out, inp, weight, bias, N, C, OC); });
}
void TimingBackend::matmul_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout,
                                    ConstTensor inp, ConstTensor weight, int N, int C, int OC) {
  timed(matmul_key("matmul_backward", C, OC),
        [&] { inner_.matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC); });
}
void TimingBackend::attention_forward(Tensor out, float* saved, ConstTensor qkv, int B, int T, int C, int NH) {
  timed("attention_forward", [&] { inner_.attention_forward(out, saved, qkv, B, T, C, NH); });
}
void TimingBackend::attention_backward(Tensor dqkv, ConstTensor dout, ConstTensor qkv, ConstTensor out,
                                       const float* saved, int B, int T, int C, int NH) {
  timed("attention_backward", [&] { inner_.attention_backward(dqkv, dout, qkv, out, saved, B, T, C, NH); });
}
void TimingBackend::matmul_gelu_forward(Tensor out, Tensor pre_gelu, ConstTensor inp, ConstTensor weight,
                                        ConstTensor bias, int N, int C, int OC) {
  timed(matmul_key("matmul_gelu_forward", C, OC),
        [&] { inner_.matmul_gelu_forward(out, pre_gelu, inp, weight, bias, N, C, OC); });
}
void TimingBackend::matmul_dgelu_backward(Tensor dpre_gelu, float* dweight, float* dbias, ConstTensor dout,
                                          ConstTensor inp, ConstTensor weight, ConstTensor pre_gelu, int N, int C,
                                          int OC) {
  timed(matmul_key("matmul_dgelu_backward", C, OC),
        [&] { inner_.matmul_dgelu_backward(dpre_gelu, dweight, dbias, dout, inp, weight, pre_gelu, N, C, OC); });
}
void TimingBackend::residual_layernorm_forward(Tensor residual, Tensor out, float* mean, float* rstd, ConstTensor a,
                                               ConstTensor b, ConstTensor weight, ConstTensor bias, int N, int C) {
  timed("residual_layernorm_forward",
        [&] { inner_.residual_layernorm_forward(residual, out, mean, rstd, a, b, weight, bias, N, C); });
}
void TimingBackend::gelu_forward(Tensor out, ConstTensor inp, size_t n) {
  timed("gelu_forward", [&] { inner_.gelu_forward(out, inp, n); });
}
void TimingBackend::gelu_backward(Tensor dinp, ConstTensor inp, ConstTensor dout, size_t n) {
  timed("gelu_backward", [&] { inner_.gelu_backward(dinp, inp, dout, n); });
}
void TimingBackend::residual_forward(Tensor out, ConstTensor a, ConstTensor b, size_t n) {
  timed("residual_forward", [&] { inner_.residual_forward(out, a, b, n); });
}
void TimingBackend::crossentropy_forward_backward(float* sample_losses, Tensor logits, const int32_t* targets,
                                                  int B, int T, int V, int Vp, float dlogits_scale) {
  timed("crossentropy_forward_backward", [&] {
    inner_.crossentropy_forward_backward(sample_losses, logits, targets, B, T, V, Vp, dlogits_scale);
  });
}
void TimingBackend::accumulate_sum(double* total, const float* x, size_t n) {
  timed("accumulate_sum", [&] { inner_.accumulate_sum(total, x, n); });
}
double TimingBackend::sum_of_squares(const float* x, size_t n) {
  return timed("sum_of_squares", [&] { return inner_.sum_of_squares(x, n); });
}
void TimingBackend::adamw_update(float* params, kernels::bf16* param_copies, const float* grads, float* m, float* v,
                                 const kernels::AdamWSegment* segments, size_t count, const kernels::AdamWParams& hp) {
  timed("adamw_update", [&] { inner_.adamw_update(params, param_copies, grads, m, v, segments, count, hp); });
}

}  // namespace eth::bench

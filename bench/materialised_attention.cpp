#include "bench/materialised_attention.hpp"

#include "kernels/cpu/gpt_ops.hpp"

namespace eth::bench {

void MaterialisedAttention::attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C,
                                              int NH) {
  std::vector<float>& att = att_[lse];
  att.resize(static_cast<size_t>(B) * NH * T * T);
  timed("attention_forward", [&] { kernels::cpu::attention_forward(out, att.data(), qkv, B, T, C, NH); });
}

void MaterialisedAttention::attention_backward(float* dqkv, const float* dout, const float* qkv, const float*,
                                               const float* lse, int B, int T, int C, int NH) {
  const std::vector<float>& att = att_.at(lse);  // throws if no forward kept this layer's matrices
  datt_.resize(att.size());
  timed("attention_backward",
        [&] { kernels::cpu::attention_backward(dqkv, datt_.data(), dout, qkv, att.data(), B, T, C, NH); });
}

}  // namespace eth::bench

#include "bench/fixed_attention.hpp"

#include "kernels/cpu/attention.hpp"

namespace eth::bench {

std::string FixedAttention::name() const {
  return TimingBackend::name() + (path_ == kernels::AttentionPath::materialised ? "+materialised" : "+blocked") +
         "-attention";
}

void FixedAttention::attention_forward(float* out, float* saved, const float* qkv, int B, int T, int C, int NH) {
  timed("attention_forward", [&] { kernels::cpu::attention_forward(path_, out, saved, qkv, B, T, C, NH); });
}

void FixedAttention::attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                                        const float* saved, int B, int T, int C, int NH) {
  timed("attention_backward",
        [&] { kernels::cpu::attention_backward(path_, dqkv, dout, qkv, out, saved, B, T, C, NH); });
}

}  // namespace eth::bench

#include "bench/fixed_attention.hpp"

#include "kernels/cpu/attention.hpp"

namespace eth::bench {

std::string FixedAttention::name() const {
  return TimingBackend::name() + (path_ == kernels::AttentionPath::materialised ? "+materialised" : "+blocked") +
         "-attention";
}

void FixedAttention::attention_forward(Tensor out, float* saved, ConstTensor qkv, int B, int T,
                                       kernels::AttentionHeads heads) {
  timed("attention_forward",
        [&] { kernels::cpu::attention_forward(path_, out.as_f32(), saved, qkv.as_f32(), B, T, heads); });
}

void FixedAttention::attention_backward(Tensor dqkv, ConstTensor dout, ConstTensor qkv, ConstTensor out,
                                        const float* saved, int B, int T, kernels::AttentionHeads heads) {
  timed("attention_backward",
        [&] {
          kernels::cpu::attention_backward(path_, dqkv.as_f32(), dout.as_f32(), qkv.as_f32(), out.as_f32(), saved, B,
                                           T, heads);
        });
}

}  // namespace eth::bench

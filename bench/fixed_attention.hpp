// A timing backend whose attention runs one CPU kernel at every T, whatever the CPU backend would
// choose (kernels/attention_path.hpp): bench_train_step's --attention blocked|materialised, to
// compare the two in a whole step at any T. It answers attention_path with that kernel, so the
// stage allocates what the kernel keeps (with materialised, the (B, NH, T, T) probabilities per
// layer and slot). Timed under the same names as TimingBackend's, so per-op profiles compare.
#pragma once

#include "bench/timing_backend.hpp"

namespace eth::bench {

class FixedAttention final : public TimingBackend {
 public:
  FixedAttention(kernels::Backend& inner, kernels::AttentionPath path) : TimingBackend(inner), path_(path) {}

  std::string name() const override;
  kernels::AttentionPath attention_path(int) const override { return path_; }
  void attention_forward(Tensor out, float* saved, ConstTensor qkv, int B, int T, kernels::AttentionHeads heads) override;
  void attention_backward(Tensor dqkv, ConstTensor dout, ConstTensor qkv, ConstTensor out, const float* saved,
                          int B, int T, kernels::AttentionHeads heads) override;

 private:
  kernels::AttentionPath path_;
};

}  // namespace eth::bench

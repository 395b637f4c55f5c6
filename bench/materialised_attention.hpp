// The attention the backends ran before the blocked kernels, for bench_train_step's old-versus-
// new comparison (--attention materialised): forward keeps every (T, T) probability matrix,
// backward reads it back, exactly as kernels/cpu/gpt_ops.cpp's materialised reference does and
// as the stage used to. The matrices live here, one (B, NH, T, T) buffer per layer, keyed by
// the layer's lse buffer, which the stage passes to forward and backward alike; so the memory
// it holds is what a stage held per micro-batch in flight before. lse itself is left unwritten.
// Timed under the same names as TimingBackend's, so the per-op profiles of both compare.
#pragma once

#include <map>
#include <vector>

#include "bench/timing_backend.hpp"

namespace eth::bench {

class MaterialisedAttention final : public TimingBackend {
 public:
  using TimingBackend::TimingBackend;

  std::string name() const override { return TimingBackend::name() + "+materialised-attention"; }
  void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH) override;
  void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                          int B, int T, int C, int NH) override;

 private:
  std::map<const float*, std::vector<float>> att_;  // per layer (its lse buffer): (B, NH, T, T)
  std::vector<float> datt_;                         // (B, NH, T, T) backward scratch
};

}  // namespace eth::bench

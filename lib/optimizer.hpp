// AdamW over a stage's flat parameter buffer, with its two moments in flat buffers of the same
// layout. Weight decay applies to the matrices and embeddings only (ParamTensor::weight_decay).
#pragma once

#include "kernels/backend.hpp"
#include "kernels/device_buffer.hpp"
#include "lib/param_layout.hpp"

namespace eth {

struct AdamWConfig {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
  float max_grad_norm = 1.0f;  // global-norm clipping; <= 0 disables it
};

// PyTorch's clip_grad_norm_ factor: min(1, max_norm / (norm + 1e-6)).
double clip_factor(double grad_norm, double max_norm);

class AdamW {
 public:
  AdamW(const ParamLayout& layout, const AdamWConfig& config, kernels::Backend& backend);

  // One update. grad_scale multiplies every gradient before use: 1/global_batch (gradients are
  // per-sample sums) times the clipping factor.
  void step(float* params, const float* grads, float lr, float grad_scale);
  int steps_taken() const { return step_; }
  const AdamWConfig& config() const { return config_; }

  // The moments, for checkpoints: (layout.size()) each, device memory.
  float* first_moments() { return m_.data(); }
  float* second_moments() { return v_.data(); }
  // Resuming from a checkpoint: the bias corrections continue from here.
  void set_steps_taken(int steps) { step_ = steps; }

 private:
  const ParamLayout& layout_;
  AdamWConfig config_;
  kernels::Backend& backend_;
  kernels::DeviceBuffer<float> m_, v_;  // (layout.size()) each
  int step_ = 0;
};

}  // namespace eth

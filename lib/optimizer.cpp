#include "lib/optimizer.hpp"

#include <algorithm>

namespace eth {

double clip_factor(double grad_norm, double max_norm) {
  if (max_norm <= 0.0) return 1.0;
  return std::min(1.0, max_norm / (grad_norm + 1e-6));
}

AdamW::AdamW(const ParamLayout& layout, const AdamWConfig& config, kernels::Backend& backend)
    : layout_(layout),
      config_(config),
      backend_(backend),
      m_(backend, layout.size()),
      v_(backend, layout.size()) {
  backend.fill_zero(m_.data(), m_.size());
  backend.fill_zero(v_.data(), v_.size());
}

void AdamW::step(float* params, const float* grads, float lr, float grad_scale) {
  step_++;
  for (const ParamTensor& t : layout_.tensors()) {
    const kernels::AdamWParams hp{lr, config_.beta1, config_.beta2, config_.eps,
                                  t.weight_decay ? config_.weight_decay : 0.0f, grad_scale, step_};
    backend_.adamw_update(params + t.offset, grads + t.offset, m_.data() + t.offset,
                          v_.data() + t.offset, t.size, hp);
  }
}

}  // namespace eth

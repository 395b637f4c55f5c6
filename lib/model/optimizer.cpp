#include "lib/model/optimizer.hpp"

#include <algorithm>

namespace eth {

double clip_factor(double grad_norm, double max_norm) {
  if (max_norm <= 0.0) return 1.0;
  return std::min(1.0, max_norm / (grad_norm + 1e-6));
}

AdamW::AdamW(const ParamLayout& layout, std::vector<FloatRange> spans, const AdamWConfig& config, kernels::Backend& backend)
    : layout_(layout),
      spans_(std::move(spans)),
      config_(config),
      backend_(backend),
      m_(backend, total_size(spans_)),
      v_(backend, total_size(spans_)) {
  backend.fill_zero(m_.data(), m_.size());
  backend.fill_zero(v_.data(), v_.size());
}

void AdamW::step(float* params, const float* grads, float lr, float grad_scale) {
  step_++;
  for (const ParamTensor& t : layout_.tensors()) {
    const kernels::AdamWParams hp{lr, config_.beta1, config_.beta2, config_.eps,
                                  t.weight_decay ? config_.weight_decay : 0.0f, grad_scale, step_};
    for_kept({t.offset, t.size}, [&](size_t at, size_t moment, size_t n) {
      backend_.adamw_update(params + t.offset + at, grads + t.offset + at, m_.data() + moment, v_.data() + moment, n, hp);
    });
  }
}

}  // namespace eth

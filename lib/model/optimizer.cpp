#include "lib/model/optimizer.hpp"

#include <algorithm>

namespace eth {

double clip_factor(double grad_norm, double max_norm) {
  if (max_norm <= 0.0) return 1.0;
  return std::min(1.0, max_norm / (grad_norm + 1e-6));
}

std::vector<kernels::AdamWSegment> adamw_segments(const ParamLayout& layout, const std::vector<FloatRange>& spans) {
  std::vector<kernels::AdamWSegment> table;
  for (const ParamTensor& t : layout.tensors()) {
    size_t moment = 0;
    for (const FloatRange& s : spans) {
      const size_t begin = std::max(s.offset, t.offset), end = std::min(s.end(), t.offset + t.size);
      if (begin < end)
        kernels::append_adamw_segments(table, begin, moment + (begin - s.offset), end - begin, t.weight_decay);
      moment += s.size;
    }
  }
  return table;
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
  const std::vector<kernels::AdamWSegment> table = adamw_segments(layout_, spans_);
  segments_ = kernels::DeviceBuffer<kernels::AdamWSegment>(backend, table.size());
  backend.copy_to_device(segments_.data(), table.data(), table.size() * sizeof(kernels::AdamWSegment));
}

void AdamW::step(float* params, kernels::Tensor param_copies, const float* grads, float lr, float grad_scale) {
  step_++;
  const kernels::AdamWParams hp{lr, config_.beta1, config_.beta2, config_.eps, config_.weight_decay, grad_scale, step_};
  backend_.adamw_update(params, param_copies, grads, m_.data(), v_.data(), segments_.data(), segments_.size(), hp);
}

}  // namespace eth

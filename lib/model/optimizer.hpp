// AdamW over a stage's flat parameter buffer. It updates the spans of the buffer it is given
// (all of it, or, with sharded optimizer state (lib/plan/optimizer_shards.hpp), all but the other
// owners' shards) and keeps its two moments for those spans only, packed in span order.
// Weight decay applies to the matrices and embeddings only (ParamTensor::weight_decay).
#pragma once

#include <algorithm>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/device_buffer.hpp"
#include "lib/model/float_range.hpp"
#include "lib/model/param_layout.hpp"

namespace eth {

struct AdamWConfig {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
  float max_grad_norm = 1.0f;  // global-norm clipping; <= 0 disables it
  bool shard = false;          // ZeRO-1 job-wide: every block of several owners sharded, beside the plan's sharded_blocks
};

// The segment table of one AdamW launch (kernels/adamw_segments.hpp) over the parts `spans` of a
// layout: each tensor's kept parts, their moments packed in span order. The memory model counts
// its bytes with it.
std::vector<kernels::AdamWSegment> adamw_segments(const ParamLayout& layout, const std::vector<FloatRange>& spans);

// PyTorch's clip_grad_norm_ factor: min(1, max_norm / (norm + 1e-6)).
double clip_factor(double grad_norm, double max_norm);

class AdamW {
 public:
  // spans: the parts of the layout this optimizer updates, ascending (updated_spans).
  AdamW(const ParamLayout& layout, std::vector<FloatRange> spans, const AdamWConfig& config, kernels::Backend& backend);
  // Updates all of the layout.
  AdamW(const ParamLayout& layout, const AdamWConfig& config, kernels::Backend& backend)
      : AdamW(layout, {{0, layout.size()}}, config, backend) {}

  // One update, in one launch. grad_scale multiplies every gradient before use: 1/global_batch
  // (gradients are per-sample sums) times the clipping factor. param_copies (the bf16 path's
  // copies of params, Stage::param_copies; null on fp32) get the updated parameters rounded.
  void step(float* params, kernels::Tensor param_copies, const float* grads, float lr, float grad_scale);
  int steps_taken() const { return step_; }
  const AdamWConfig& config() const { return config_; }

  // The moments, for checkpoints and re-balancing: (moment_size()) each, device memory, the
  // spans' moments one after another.
  float* first_moments() { return m_.data(); }
  float* second_moments() { return v_.data(); }
  size_t moment_size() const { return m_.size(); }
  // Where the parts of layout range `range` that this optimizer keeps lie in the moments:
  // calls part(offset in range, offset in the moments, size) for each.
  template <typename F>
  void for_kept(FloatRange range, F&& part) const {
    size_t moment = 0;
    for (const FloatRange& s : spans_) {
      const size_t begin = std::max(s.offset, range.offset), end = std::min(s.end(), range.end());
      if (begin < end) part(begin - range.offset, moment + (begin - s.offset), end - begin);
      moment += s.size;
    }
  }
  const std::vector<FloatRange>& spans() const { return spans_; }
  // Resuming from a checkpoint: the bias corrections continue from here.
  void set_steps_taken(int steps) { step_ = steps; }

 private:
  const ParamLayout& layout_;
  std::vector<FloatRange> spans_;
  AdamWConfig config_;
  kernels::Backend& backend_;
  kernels::DeviceBuffer<float> m_, v_;  // (total_size(spans_)) each
  kernels::DeviceBuffer<kernels::AdamWSegment> segments_;  // adamw_segments(layout_, spans_), in device memory
  int step_ = 0;
};

}  // namespace eth

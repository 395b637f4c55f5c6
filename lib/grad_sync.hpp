// Gradient aggregation after a step's backwards: every gradient block reduced once among its
// owners (block mode), or every model unit reduced separately after backward (per-layer mode,
// the baseline), plus the tied word embedding among the first and last stages.
//
// In block mode a block's reduction starts as soon as its lowest unit's gradients are final in
// the step's last backward (Stage::backward reports each unit), overlapping the remaining
// backward; finish() waits for the rest. Sums only: the optimizer applies 1/global_batch.
#pragma once

#include <vector>

#include "kernels/backend.hpp"
#include "lib/parallel_context.hpp"
#include "lib/param_layout.hpp"

namespace eth {

enum class GradSyncMode { block, per_layer };

class GradSync {
 public:
  GradSync(const ParallelContext& ctx, const ParamLayout& layout, GradSyncMode mode);

  // Called (block mode) from the last backward when `unit` is complete.
  void unit_done(int unit, float* grads);
  // Starts what has not started and waits for every reduction of this step.
  void finish(float* grads);

  // This rank's share of the squared global gradient norm: each block and the tied embedding
  // counted by exactly one owner, so a world sum gives the norm of the whole model.
  double owned_sum_of_squares(kernels::Backend& backend, const float* grads) const;

  int collectives_per_step() const;  // on this rank

 private:
  struct Slice {
    const ProcessGroup* group;
    size_t offset, size;
    int start_unit;       // the unit whose completion makes the slice final
    bool counted_here;    // this rank counts it in the norm
  };
  void start(Slice& slice, float* grads, size_t index);

  GradSyncMode mode_;
  std::vector<Slice> slices_;          // in the order reductions start
  std::vector<bool> started_;
  std::vector<PendingReduce> pending_;
};

}  // namespace eth

// Gradient aggregation after a step's backwards: every gradient block reduced once among its
// owners (block mode), or every model unit reduced separately after backward (per-layer mode,
// the baseline), plus the tied word embedding among the first and last stages.
//
// In block mode a block's sum starts as soon as its lowest unit's gradient work has been
// enqueued in the step's last backward (Stage::backward reports each unit): the reducer
// (mpi_topology/sum_reducer.hpp, MPI or NCCL) begins once that work has completed on the device,
// overlapping the remaining backward. Slices are listed, and started, in one global order:
// blocks from the top of the model down, the tied embedding last. finish() waits for the rest.
// Sums only: the optimizer applies 1/global_batch.
#pragma once

#include <memory>
#include <vector>

#include "kernels/backend.hpp"
#include "lib/parallel_context.hpp"
#include "lib/param_layout.hpp"
#include "mpi_topology/sum_reducer.hpp"

namespace eth {

enum class GradSyncMode { block, per_layer };

class GradSync {
 public:
  // grads: the stage's flat gradient buffer (layout.size()), in the reducer's device memory.
  GradSync(const ParallelContext& ctx, const ParamLayout& layout, GradSyncMode mode,
           std::unique_ptr<SumReducer> reducer, float* grads);

  // Called (block mode) from the last backward once `unit`'s gradient work is enqueued.
  void unit_done(int unit);
  void poll() { reducer_->poll(); }  // never blocks; between pieces of other work
  // Starts what has not started and waits for every sum of this step; work enqueued afterwards
  // sees the summed gradients.
  void finish();

  // This rank's share of the squared global gradient norm: each block and the tied embedding
  // counted by exactly one owner, so a world sum gives the norm of the whole model.
  double owned_sum_of_squares(kernels::Backend& backend) const;

  int collectives_per_step() const;  // on this rank
  std::string path() const { return reducer_->path(); }

 private:
  struct Slice {
    const ProcessGroup* group;
    size_t offset, size;
    int start_unit;       // the unit whose completion makes the slice final
    bool counted_here;    // this rank counts it in the norm
  };
  void start_reached();  // starts the reached slices that every earlier one allows

  GradSyncMode mode_;
  float* grads_;
  std::unique_ptr<SumReducer> reducer_;
  std::vector<Slice> slices_;  // in the global order
  std::vector<bool> reached_;  // this step: the slice's unit is done
  size_t next_start_ = 0;
};

}  // namespace eth

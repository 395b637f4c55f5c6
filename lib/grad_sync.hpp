// Gradient aggregation after a step's backwards: every gradient block reduced once among its
// owners (block mode), or every model unit reduced separately after backward (per-layer mode,
// the baseline), plus the tied word embedding among the first and last stages.
//
// In block mode a block's reduction is armed as soon as its lowest unit's gradient work has been
// enqueued in the step's last backward (Stage::backward reports each unit): an event is recorded
// after it (and, when MPI cannot read device memory, after a copy to a pinned mirror), and the
// MPI reduction starts once poll() sees the event done, overlapping the remaining backward.
// finish() starts the rest, waits, and enqueues the copies back. Sums only: the optimizer
// applies 1/global_batch.
#pragma once

#include <vector>

#include "kernels/backend.hpp"
#include "lib/parallel_context.hpp"
#include "lib/param_layout.hpp"
#include "mpi_topology/wire_buffer.hpp"

namespace eth {

enum class GradSyncMode { block, per_layer };

class GradSync {
 public:
  // grads: the stage's flat gradient buffer (layout.size()), in `device` memory.
  GradSync(const ParallelContext& ctx, const ParamLayout& layout, GradSyncMode mode, kernels::Device& device,
           float* grads);

  // Called (block mode) from the last backward once `unit`'s gradient work is enqueued.
  void unit_done(int unit);
  // Starts what the device has finished; never blocks. Called between pieces of other work.
  void poll();
  // Starts what has not started and waits for every reduction of this step; the reduced
  // gradients are then in the gradient buffer for all work enqueued after this call.
  void finish();

  // This rank's share of the squared global gradient norm: each block and the tied embedding
  // counted by exactly one owner, so a world sum gives the norm of the whole model.
  double owned_sum_of_squares(kernels::Backend& backend) const;

  int collectives_per_step() const;  // on this rank

 private:
  struct Slice {
    const ProcessGroup* group;
    size_t offset, size;
    int start_unit;       // the unit whose completion makes the slice final
    bool counted_here;    // this rank counts it in the norm
  };
  enum class State { idle, armed, reducing };
  void arm(size_t index);
  void start(size_t index);

  GradSyncMode mode_;
  float* grads_;
  std::vector<Slice> slices_;          // in the order reductions start
  std::vector<WireBuffer> wires_;      // per slice: its gradients as MPI sees them
  std::vector<kernels::Event> final_;  // per slice: its gradients (and mirror) are final
  std::vector<State> state_;
  std::vector<PendingReduce> pending_;
};

}  // namespace eth

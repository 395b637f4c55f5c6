// Gradient aggregation after a step's backwards: every gradient block reduced once among its
// owners (block mode), or every model unit reduced separately after backward (per-layer mode,
// the baseline), plus the tied word embedding among the first and last stages. A second
// baseline, flat mode, is what plain data parallelism on one global buffer does: every rank
// places its gradients in a zeroed buffer of the whole model and one flat all-reduce over all
// training ranks sums it (every byte of the model crosses every link, owners or not).
//
// In block mode a block's sum starts as soon as its lowest unit's gradient work has been
// enqueued in the step's last backward (Stage::backward reports each unit): the reducer
// (mpi_topology/sum_reducer.hpp, MPI or NCCL) begins once that work has completed on the device,
// overlapping the remaining backward. Slices are listed, and started, in one global order:
// blocks from the top of the model down, the tied embedding last; or, where its embedding rows
// are added late (tied_early, lib/runtime/late_embedding_rows.hpp), the tied embedding first, started
// once the head's backward is done (or, on a first stage without the head, once the last
// backward begins). finish() waits for the rest. Sums only: the optimizer applies 1/global_batch.
//
// With sharded optimizer state (lib/plan/optimizer_shards.hpp, block mode only), a sharded block's
// sum reaches each owner for its own shard only, each owner counts its shard in the norm, and
// gather_params() returns the updated shards to every owner after the optimizer step.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/device_buffer.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/plan/optimizer_shards.hpp"
#include "lib/runtime/parallel_context.hpp"
#include "mpi_topology/sum_reducer.hpp"
#include "mpi_topology/wire_buffer.hpp"

namespace eth {

enum class GradSyncMode { block, per_layer, flat };
inline const char* grad_sync_name(GradSyncMode m) {  // for the log
  return m == GradSyncMode::block ? "block-wise" : m == GradSyncMode::per_layer ? "per-layer" : "flat";
}

class GradSync {
 public:
  // grads: the stage's flat gradient buffer (layout.size()), in the reducer's device memory;
  // whole: the one-stage layout of the model (flat mode's buffer); shards: the stage's blocks
  // (block_shards), sharded ones only in block mode; params: the stage's parameters.
  GradSync(const ParallelContext& ctx, const ParamLayout& layout, const ParamLayout& whole, GradSyncMode mode,
           std::unique_ptr<SumReducer> reducer, kernels::Device& device, float* grads, bool tied_early,
           const std::vector<BlockShard>& shards, float* params);

  // Called (block mode) from the last backward once `unit`'s gradient work is enqueued, and
  // with kLastBackwardBegins before it starts.
  static constexpr int kLastBackwardBegins = -1;
  void unit_done(int unit);
  void poll() { reducer_->poll(); }  // never blocks; between pieces of other work
  // Starts what has not started and waits for every sum of this step; work enqueued afterwards
  // sees the summed gradients.
  void finish();

  // Sharded blocks: every owner receives the others' updated shards of the parameters. Collective
  // over each sharded block's owners; waits (through the watchdog) until done.
  void gather_params();

  // This rank's share of the squared global gradient norm: each block and the tied embedding
  // counted by exactly one owner (each shard of a sharded block by its owner), so a world sum gives the norm of the whole model. Appends to
  // `nonfinite` the name of each counted slice whose sum is not finite ("block 1 (layers 1-2)").
  double owned_sum_of_squares(kernels::Backend& backend, std::string& nonfinite) const;
  // Where block `block` (ParallelContext::blocks) lies in this rank's gradients; size 0 when
  // this rank does not hold it.
  struct Range {
    size_t offset = 0, size = 0;
  };
  Range block_range(int block) const;

  int collectives_per_step() const;  // on this rank
  std::string path() const { return reducer_->path(); }

 private:
  struct Slice {
    const ProcessGroup* group;
    size_t offset, size;
    int start_unit;       // the unit whose completion makes the slice final
    bool counted_here;    // this rank counts it in the norm
    std::string name;     // "block 1 (layers 1-2)", for messages
    int block;            // its block, -1 for the tied embedding
    std::vector<int> shard_counts;  // a sharded block: its owners' shard sizes; else empty
    FloatRange own;             // what this rank counts: its shard, or the whole slice
  };
  // A sharded block's parameters as MPI sees them, for the all-gather.
  struct ParamSlice {
    const ProcessGroup* group;
    WireBuffer wire;
    std::vector<int> counts;
    std::string what;
  };
  void start_reached();  // starts the reached slices that every earlier one allows
  void flat_sum();       // flat mode: gather into the whole-model buffer, sum, scatter back

  // Flat mode: where this stage's gradients sit in the whole model's buffer.
  struct Placement {
    size_t stage_offset, whole_offset, size;
  };

  GradSyncMode mode_;
  float* grads_;
  std::unique_ptr<SumReducer> reducer_;
  std::vector<Slice> slices_;  // in the global order; in flat mode only for the norm
  kernels::Device& device_;
  kernels::DeviceBuffer<float> whole_;  // flat mode: (whole model)
  std::vector<Placement> placements_;
  std::vector<ParamSlice> param_slices_;  // sharded blocks
  std::vector<bool> reached_;  // this step: the slice's unit is done
  size_t next_start_ = 0;
};

}  // namespace eth

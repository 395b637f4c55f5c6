// Gradient aggregation after a step's backwards, in one of three modes chosen once
// (make_grad_sync), each its own implementation (lib/runtime/grad_sync_modes.hpp):
//   - block (block_grad_sync.cpp): every gradient block reduced once among its owners, started
//     from the last backward as soon as the block is final;
//   - per-layer (per_layer_grad_sync.cpp), the baseline: every model unit reduced separately
//     after backward;
//   - flat (flat_grad_sync.cpp), what plain data parallelism on one global buffer does: every
//     rank places its gradients in a zeroed buffer of the whole model and one flat all-reduce
//     over all training ranks sums it (every byte of the model crosses every link, owners or not).
// The tied word embedding is reduced among the first and last stages (block and per-layer
// modes; the flat buffer holds it once). Sums only: the optimizer applies 1/global_batch.
//
// What every mode shares lives here: the slices of the stage's gradients in the one global
// order (grad_slices.hpp), the gradient norm from them, and where a block lies.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/plan/optimizer_shards.hpp"
#include "lib/runtime/grad_slices.hpp"
#include "lib/runtime/parallel_context.hpp"
#include "mpi_topology/sum_reducer.hpp"

namespace eth {

enum class GradSyncMode { block, per_layer, flat };
inline const char* grad_sync_name(GradSyncMode m) {  // for the log
  return m == GradSyncMode::block ? "block-wise" : m == GradSyncMode::per_layer ? "per-layer" : "flat";
}

class GradSync {
 public:
  virtual ~GradSync() = default;

  // Called from the last backward once `unit`'s gradient work is enqueued, and with
  // kLastBackwardBegins (grad_slices.hpp) before it starts (only block mode starts sums there).
  virtual void unit_done(int unit) { (void)unit; }
  void poll() { reducer_->poll(); }  // never blocks; between pieces of other work
  // Starts what has not started and waits for every sum of this step; work enqueued afterwards
  // sees the summed gradients.
  virtual void finish() = 0;
  // The same, with the sums started in the reverse of the global order: the reverse-sums fault
  // (fault_injection.hpp). Block mode only; the other modes start theirs in finish() alone.
  virtual void finish_in_reverse_order() { finish(); }
  // Sharded blocks (block mode): every owner receives the others' updated shards of the
  // parameters. Collective over each sharded block's owners; waits (through the watchdog).
  virtual void gather_params() {}

  // This rank's share of the squared global gradient norm: each block and the tied embedding
  // counted by exactly one owner (each shard of a sharded block by its owner), so a world sum
  // gives the norm of the whole model. Appends to `nonfinite` the name of each counted slice
  // whose sum is not finite ("block 1 (layers 1-2)").
  double owned_sum_of_squares(kernels::Backend& backend, std::string& nonfinite) const;
  // Where block `block` (ParallelContext::blocks) lies in this rank's gradients; size 0 when
  // this rank does not hold it.
  struct Range {
    size_t offset = 0, size = 0;
  };
  Range block_range(int block) const;

  virtual int collectives_per_step() const;  // on this rank
  std::string path() const { return reducer_->path(); }

 protected:
  GradSync(std::unique_ptr<SumReducer> reducer, float* grads, std::vector<GradSlice> slices)
      : reducer_(std::move(reducer)), grads_(grads), slices_(std::move(slices)) {}

  std::unique_ptr<SumReducer> reducer_;
  float* grads_;                   // the stage's flat gradient buffer
  std::vector<GradSlice> slices_;  // in the global order; in flat mode only for the norm
};

// grads: the stage's flat gradient buffer (layout.size()), in the reducer's device memory;
// whole: the one-stage layout of the model (flat mode's buffer); tied_early: the tied embedding
// is summed from the head's backward on (block mode, lib/runtime/late_embedding_rows.hpp);
// shards: the stage's blocks (block_shards), sharded ones only in block mode; params: the
// stage's parameters (the sharded blocks' all-gather).
std::unique_ptr<GradSync> make_grad_sync(GradSyncMode mode, const ParallelContext& ctx, const ParamLayout& layout,
                                         const ParamLayout& whole, std::unique_ptr<SumReducer> reducer,
                                         kernels::Device& device, float* grads, bool tied_early,
                                         const std::vector<BlockShard>& shards, float* params);

}  // namespace eth

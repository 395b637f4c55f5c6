// The three implementations of GradSync (grad_sync.hpp), one per mode; make_grad_sync picks one.
#pragma once

#include <vector>

#include "kernels/device_buffer.hpp"
#include "lib/runtime/grad_sync.hpp"
#include "mpi_topology/wire_buffer.hpp"

namespace eth {

// Each block's sum starts as soon as its lowest unit's gradient work has been enqueued in the
// step's last backward (Stage::backward reports each unit): the reducer (mpi_topology/sum_reducer.hpp,
// MPI or NCCL) begins once that work has completed on the device, overlapping the remaining
// backward. Slices start in the global order (grad_slices.hpp); where the tied embedding's
// rows are added late, its sum starts once the head's backward is done (or, on a first stage
// without the head, once the last backward begins). finish() waits for the rest.
//
// With sharded optimizer state (lib/plan/optimizer_shards.hpp), a sharded block's sum reaches
// each owner for its own shard only, each owner counts its shard in the norm, and
// gather_params() returns the updated shards to every owner after the optimizer step.
class BlockGradSync final : public GradSync {
 public:
  BlockGradSync(const ParallelContext& ctx, const ParamLayout& layout, std::unique_ptr<SumReducer> reducer,
                kernels::Device& device, float* grads, bool tied_early, const std::vector<BlockShard>& shards,
                float* params);
  void unit_done(int unit) override;
  void finish() override;
  void finish_in_reverse_order() override;
  void gather_params() override;

 private:
  // A sharded block's parameters as MPI sees them, for the all-gather.
  struct ParamSlice {
    const ProcessGroup* group;
    WireBuffer<float> wire;
    std::vector<size_t> counts;
    std::string what;
  };
  void start_reached();  // starts the reached slices that every earlier one allows

  kernels::Device& device_;
  std::vector<ParamSlice> param_slices_;  // sharded blocks
  std::vector<bool> reached_;             // this step: the slice's unit is done
  size_t next_start_ = 0;
};

// The baseline: every unit of the stage summed separately among its block's owners, one sum at
// a time after the backwards.
class PerLayerGradSync final : public GradSync {
 public:
  PerLayerGradSync(const ParallelContext& ctx, const ParamLayout& layout, std::unique_ptr<SumReducer> reducer,
                   float* grads, const std::vector<BlockShard>& shards);
  void finish() override;
};

// The second baseline: the stage's gradients placed in a zeroed buffer of the whole model, one
// flat all-reduce over every training rank, and the sums copied back.
class FlatGradSync final : public GradSync {
 public:
  FlatGradSync(const ParallelContext& ctx, const ParamLayout& layout, const ParamLayout& whole,
               std::unique_ptr<SumReducer> reducer, kernels::Device& device, float* grads,
               const std::vector<BlockShard>& shards);
  void finish() override;
  int collectives_per_step() const override { return 1; }

 private:
  // Where this stage's gradients sit in the whole model's buffer.
  struct Placement {
    size_t stage_offset, whole_offset, size;
  };
  kernels::Device& device_;
  kernels::DeviceBuffer<float> whole_;  // (whole model)
  std::vector<Placement> placements_;
};

}  // namespace eth

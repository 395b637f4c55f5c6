#include "lib/runtime/grad_sync_modes.hpp"

#include "mpi_topology/shard_collectives.hpp"

namespace eth {

BlockGradSync::BlockGradSync(const ParallelContext& ctx, const ParamLayout& layout, std::unique_ptr<SumReducer> reducer,
                             kernels::Device& device, float* grads, bool tied_early,
                             const std::vector<BlockShard>& shards, float* params)
    : GradSync(std::move(reducer), grads, grad_slices(ctx, layout, false, tied_early && ctx.tied.is_member(), shards)),
      device_(device),
      reached_(slices_.size(), false) {
  const bool direct = mpi_collectives_read_device_buffers(device);  // the all-gathers
  for (const GradSlice& s : slices_) {
    if (s.shard_counts.empty()) {
      reducer_->add_slice(*s.group, grads + s.offset, s.size, "reduction of " + s.name);
      continue;
    }
    reducer_->add_owner_slice(*s.group, grads + s.offset, s.shard_counts, "reduction to the shards' owners of " + s.name);
    param_slices_.push_back({s.group, WireBuffer<float>(device, params + s.offset, s.size, direct),
                             s.shard_counts,
                             "all-gather of the updated shards of " + s.name});
  }
}

void BlockGradSync::start_reached() {
  for (; next_start_ < slices_.size() && reached_[next_start_]; next_start_++)
    reducer_->start(static_cast<int>(next_start_));
}

void BlockGradSync::unit_done(int unit) {
  for (size_t i = 0; i < slices_.size(); i++)
    if (slices_[i].start_unit == unit) reached_[i] = true;
  start_reached();
  reducer_->poll();
}

void BlockGradSync::finish() {
  reached_.assign(slices_.size(), true);
  start_reached();
  reducer_->finish();
  reached_.assign(slices_.size(), false);
  next_start_ = 0;
}

void BlockGradSync::finish_in_reverse_order() {
  for (size_t i = slices_.size(); i-- > next_start_;) reducer_->start(static_cast<int>(i));
  reducer_->finish();
  reached_.assign(slices_.size(), false);
  next_start_ = 0;
}

void BlockGradSync::gather_params() {
  if (param_slices_.empty()) return;
  for (ParamSlice& p : param_slices_) p.wire.stage_out();
  kernels::Event staged(device_);
  staged.record();
  staged.wait();  // the optimizer's updates (and their copy to the mirrors) are done
  std::vector<PendingShards> pending;
  for (ParamSlice& p : param_slices_) pending.push_back(PendingShards::all_gather(*p.group, p.wire.wire(), p.counts));
  for (size_t i = 0; i < pending.size(); i++) pending[i].wait(param_slices_[i].what);
  for (ParamSlice& p : param_slices_) p.wire.stage_in();
}

}  // namespace eth

#include <algorithm>
#include <cassert>

#include "lib/plan/grad_blocks.hpp"
#include "lib/runtime/grad_sync_modes.hpp"

namespace eth {

FlatGradSync::FlatGradSync(const ParallelContext& ctx, const ParamLayout& layout, const ParamLayout& whole,
                           std::unique_ptr<SumReducer> reducer, kernels::Device& device, float* grads,
                           const std::vector<BlockShard>& shards)
    : GradSync(std::move(reducer), grads, grad_slices(ctx, layout, false, false, shards)),
      device_(device),
      whole_(device, whole.size()) {
  assert(std::none_of(shards.begin(), shards.end(), [](const BlockShard& s) { return s.sharded; }));  // block mode only
  // The stage's units are contiguous in both layouts (an untied model's wte and head among
  // them); a tied model's wte (embedding or head copy) goes to the model's one wte, so the flat
  // sum adds both uses of it as the tied group would.
  const LayerRange mine = stage_units(layout.layers(), ctx.blocks.back().unit_end - 2);
  placements_.push_back({layout.unit_offset(mine.begin), whole.unit_offset(mine.begin),
                         layout.unit_offset(mine.end - 1) + layout.unit_size(mine.end - 1) - layout.unit_offset(mine.begin)});
  if (ctx.tied.is_member())
    placements_.push_back({layout.has_embedding() ? layout.wte() : layout.head_wte(), whole.wte(), layout.wte_size()});
  reducer_->add_slice(ctx.flat, whole_.data(), whole.size(), "flat reduction of the whole model");
}

void FlatGradSync::finish() {
  device_.fill_zero(whole_.data(), whole_.size());
  for (const Placement& p : placements_)
    device_.copy(whole_.data() + p.whole_offset, grads_ + p.stage_offset, p.size * sizeof(float));
  reducer_->start(0);
  reducer_->finish();
  for (const Placement& p : placements_)
    device_.copy(grads_ + p.stage_offset, whole_.data() + p.whole_offset, p.size * sizeof(float));
}

}  // namespace eth

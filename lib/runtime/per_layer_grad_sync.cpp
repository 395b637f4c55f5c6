#include <algorithm>
#include <cassert>

#include "lib/runtime/grad_sync_modes.hpp"

namespace eth {

PerLayerGradSync::PerLayerGradSync(const ParallelContext& ctx, const ParamLayout& layout,
                                   std::unique_ptr<SumReducer> reducer, float* grads,
                                   const std::vector<BlockShard>& shards)
    : GradSync(std::move(reducer), grads, grad_slices(ctx, layout, true, false, shards)) {
  assert(std::none_of(shards.begin(), shards.end(), [](const BlockShard& s) { return s.sharded; }));  // block mode only
  for (const GradSlice& s : slices_) reducer_->add_slice(*s.group, grads + s.offset, s.size, "reduction of " + s.name);
}

void PerLayerGradSync::finish() {
  for (size_t i = 0; i < slices_.size(); i++) {  // one sum at a time
    reducer_->start(static_cast<int>(i));
    reducer_->finish();
  }
}

}  // namespace eth

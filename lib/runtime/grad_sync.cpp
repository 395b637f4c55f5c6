#include "lib/runtime/grad_sync.hpp"

#include <algorithm>
#include <cmath>

#include "lib/runtime/grad_sync_modes.hpp"

namespace eth {

double GradSync::owned_sum_of_squares(kernels::Backend& backend, std::string& nonfinite) const {
  double sum = 0.0;
  for (const GradSlice& s : slices_) {
    if (!s.counted_here) continue;
    const double squares = backend.sum_of_squares(grads_ + s.own.offset, s.own.size);
    if (!std::isfinite(squares)) nonfinite += (nonfinite.empty() ? "" : ", ") + s.name;
    sum += squares;
  }
  return sum;
}

GradSync::Range GradSync::block_range(int block) const {
  Range range;
  for (const GradSlice& s : slices_) {  // per-layer mode: the block's units, adjacent
    if (s.block != block) continue;
    const size_t end = std::max(range.offset + range.size, s.offset + s.size);
    range.offset = range.size == 0 ? s.offset : std::min(range.offset, s.offset);
    range.size = end - range.offset;
  }
  return range;
}

int GradSync::collectives_per_step() const {
  int n = 0;
  for (const GradSlice& s : slices_) n += s.group->size() > 1;  // a group of one reduces nothing
  return n;
}

std::unique_ptr<GradSync> make_grad_sync(GradSyncMode mode, const ParallelContext& ctx, const ParamLayout& layout,
                                         const ParamLayout& whole, std::unique_ptr<SumReducer> reducer,
                                         kernels::Device& device, float* grads, bool tied_early,
                                         const std::vector<BlockShard>& shards, float* params) {
  switch (mode) {
    case GradSyncMode::block:
      return std::make_unique<BlockGradSync>(ctx, layout, std::move(reducer), device, grads, tied_early, shards, params);
    case GradSyncMode::per_layer:
      return std::make_unique<PerLayerGradSync>(ctx, layout, std::move(reducer), grads, shards);
    case GradSyncMode::flat:
      return std::make_unique<FlatGradSync>(ctx, layout, whole, std::move(reducer), device, grads, shards);
  }
  return nullptr;
}

}  // namespace eth

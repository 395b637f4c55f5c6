#include "lib/grad_sync.hpp"

#include "lib/grad_blocks.hpp"

namespace eth {

GradSync::GradSync(const ParallelContext& ctx, const ParamLayout& layout, GradSyncMode mode,
                   std::unique_ptr<SumReducer> reducer, float* grads)
    : mode_(mode), grads_(grads), reducer_(std::move(reducer)) {
  const int L = ctx.blocks.back().unit_end - 2;
  const LayerRange mine = stage_units(layout.layers(), L);
  // Backward finishes units from the top down, so slices are listed top down.
  for (size_t b = ctx.blocks.size(); b-- > 0;) {
    const GradBlock& block = ctx.blocks[b];
    if (block.unit_end <= mine.begin || block.unit_begin >= mine.end) continue;
    const ProcessGroup* group = &ctx.block_groups[b];
    const bool counted = block.owners.front() == ctx.world_rank;
    if (mode == GradSyncMode::block) {
      const size_t begin = layout.unit_offset(block.unit_begin);
      const size_t end = layout.unit_offset(block.unit_end - 1) + layout.unit_size(block.unit_end - 1);
      slices_.push_back({group, begin, end - begin, block.unit_begin, counted});
    } else {
      for (int u = block.unit_end - 1; u >= block.unit_begin; u--)
        slices_.push_back({group, layout.unit_offset(u), layout.unit_size(u), u, counted});
    }
  }
  if (ctx.tied.is_member()) {
    // The first stage's wte is final with unit 0; a last stage's head copy with unit L+1. Last
    // in the order on every rank, so that NCCL's in-order streams see one order everywhere.
    const bool first = layout.has_embedding();
    slices_.push_back({&ctx.tied, first ? layout.wte() : layout.head_wte(), layout.wte_size(), first ? 0 : L + 1,
                       ctx.tied.members().front() == ctx.world_rank});
  }
  for (const Slice& s : slices_) reducer_->add_slice(*s.group, grads + s.offset, s.size);
  reached_.assign(slices_.size(), false);
}

void GradSync::start_reached() {
  for (; next_start_ < slices_.size() && reached_[next_start_]; next_start_++)
    reducer_->start(static_cast<int>(next_start_));
}

void GradSync::unit_done(int unit) {
  if (mode_ != GradSyncMode::block) return;
  for (size_t i = 0; i < slices_.size(); i++)
    if (slices_[i].start_unit == unit) reached_[i] = true;
  start_reached();
  reducer_->poll();
}

void GradSync::finish() {
  if (mode_ == GradSyncMode::block) {
    reached_.assign(slices_.size(), true);
    start_reached();
    reducer_->finish();
  } else {
    for (size_t i = 0; i < slices_.size(); i++) {  // the baseline: one sum at a time
      reducer_->start(static_cast<int>(i));
      reducer_->finish();
    }
  }
  reached_.assign(slices_.size(), false);
  next_start_ = 0;
}

double GradSync::owned_sum_of_squares(kernels::Backend& backend) const {
  double sum = 0.0;
  for (const Slice& s : slices_)
    if (s.counted_here) sum += backend.sum_of_squares(grads_ + s.offset, s.size);
  return sum;
}

int GradSync::collectives_per_step() const {
  int n = 0;
  for (const Slice& s : slices_) n += s.group->size() > 1;  // a group of one reduces nothing
  return n;
}

}  // namespace eth

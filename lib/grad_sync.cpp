#include "lib/grad_sync.hpp"

#include "lib/grad_blocks.hpp"

namespace eth {

GradSync::GradSync(const ParallelContext& ctx, const ParamLayout& layout, GradSyncMode mode) : mode_(mode) {
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
    // The first stage's wte is final with unit 0; a last stage's head copy with unit L+1.
    const bool first = layout.has_embedding();
    slices_.push_back({&ctx.tied, first ? layout.wte() : layout.head_wte(), layout.wte_size(), first ? 0 : L + 1,
                       ctx.tied.members().front() == ctx.world_rank});
  }
  started_.assign(slices_.size(), false);
  pending_.resize(slices_.size());
}

void GradSync::start(Slice& slice, float* grads, size_t index) {
  started_[index] = true;
  if (mode_ == GradSyncMode::block) {
    pending_[index] = slice.group->start_allreduce_sum(grads + slice.offset, slice.size);
  } else {
    slice.group->allreduce_sum(grads + slice.offset, slice.size);  // the baseline: one at a time
  }
}

void GradSync::unit_done(int unit, float* grads) {
  if (mode_ != GradSyncMode::block) return;
  for (size_t i = 0; i < slices_.size(); i++) {
    if (!started_[i] && slices_[i].start_unit == unit) start(slices_[i], grads, i);
    pending_[i].test();  // MPI progresses only inside MPI calls
  }
}

void GradSync::finish(float* grads) {
  for (size_t i = 0; i < slices_.size(); i++)
    if (!started_[i]) start(slices_[i], grads, i);
  for (PendingReduce& p : pending_) p.wait();
  started_.assign(slices_.size(), false);
}

double GradSync::owned_sum_of_squares(kernels::Backend& backend, const float* grads) const {
  double sum = 0.0;
  for (const Slice& s : slices_)
    if (s.counted_here) sum += backend.sum_of_squares(grads + s.offset, s.size);
  return sum;
}

int GradSync::collectives_per_step() const {
  int n = 0;
  for (const Slice& s : slices_) n += s.group->size() > 1;  // a group of one reduces nothing
  return n;
}

}  // namespace eth

#include "lib/grad_sync.hpp"

#include "lib/grad_blocks.hpp"

namespace eth {

GradSync::GradSync(const ParallelContext& ctx, const ParamLayout& layout, GradSyncMode mode, kernels::Device& device,
                   float* grads)
    : mode_(mode), grads_(grads) {
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
  const bool direct = mpi_reads_device_buffers(device);
  for (const Slice& s : slices_) {
    // A slice reduced by nobody else needs no mirror.
    wires_.emplace_back(device, grads + s.offset, s.size, direct || s.group->size() == 1);
    final_.emplace_back(device);
  }
  state_.assign(slices_.size(), State::idle);
  pending_.resize(slices_.size());
}

void GradSync::arm(size_t index) {
  wires_[index].stage_out();
  final_[index].record();
  state_[index] = State::armed;
}

void GradSync::start(size_t index) {
  const Slice& slice = slices_[index];
  state_[index] = State::reducing;
  if (mode_ == GradSyncMode::block) {
    pending_[index] = slice.group->start_allreduce_sum(wires_[index].wire(), slice.size);
  } else {
    final_[index].wait();
    slice.group->allreduce_sum(wires_[index].wire(), slice.size);  // the baseline: one at a time
  }
}

void GradSync::unit_done(int unit) {
  if (mode_ != GradSyncMode::block) return;
  for (size_t i = 0; i < slices_.size(); i++)
    if (state_[i] == State::idle && slices_[i].start_unit == unit) arm(i);
  poll();
}

void GradSync::poll() {
  for (size_t i = 0; i < slices_.size(); i++) {
    if (state_[i] == State::armed && final_[i].done()) start(i);
    if (state_[i] == State::reducing) pending_[i].test();  // MPI progresses only inside MPI calls
  }
}

void GradSync::finish() {
  for (size_t i = 0; i < slices_.size(); i++)
    if (state_[i] == State::idle) arm(i);
  for (size_t i = 0; i < slices_.size(); i++) {
    if (state_[i] == State::armed) {
      final_[i].wait();
      start(i);
    }
  }
  for (size_t i = 0; i < slices_.size(); i++) {
    pending_[i].wait();
    wires_[i].stage_in();
  }
  state_.assign(slices_.size(), State::idle);
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

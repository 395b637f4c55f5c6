#include "lib/runtime/grad_sync.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "lib/plan/grad_blocks.hpp"
#include "mpi_topology/shard_collectives.hpp"

namespace eth {

GradSync::GradSync(const ParallelContext& ctx, const ParamLayout& layout, const ParamLayout& whole, GradSyncMode mode,
                   std::unique_ptr<SumReducer> reducer, kernels::Device& device, float* grads, bool tied_early,
                   const std::vector<BlockShard>& shards, float* params)
    : mode_(mode), grads_(grads), reducer_(std::move(reducer)), device_(device) {
  const int L = ctx.blocks.back().unit_end - 2;
  const LayerRange mine = stage_units(layout.layers(), L);
  const bool tied_first = tied_early && mode == GradSyncMode::block && ctx.tied.is_member();
  if (tied_first) {
    slices_.push_back({&ctx.tied, layout.head_wte(), layout.wte_size(),
                       layout.has_head() ? L + 1 : kLastBackwardBegins, ctx.tied.members().front() == ctx.world_rank,
                       "the tied word embedding", -1, {}, {layout.head_wte(), layout.wte_size()}});
  }
  // Backward finishes units from the top down, so slices are listed top down.
  for (size_t b = ctx.blocks.size(); b-- > 0;) {
    const GradBlock& block = ctx.blocks[b];
    if (block.unit_end <= mine.begin || block.unit_begin >= mine.end) continue;
    const ProcessGroup* group = &ctx.block_groups[b];
    const bool counted = block.owners.front() == ctx.world_rank;
    const std::string name = "block " + std::to_string(b) + " (" + units_name(block.unit_begin, block.unit_end, L) + ")";
    const BlockShard& shard = *std::find_if(shards.begin(), shards.end(), [&](const BlockShard& s) { return s.block == static_cast<int>(b); });
    assert(!shard.sharded || mode == GradSyncMode::block);
    if (mode != GradSyncMode::per_layer) {
      std::vector<int> counts;
      for (int i = 0; shard.sharded && i < shard.owners; i++)
        counts.push_back(static_cast<int>(shard_span(shard.slice.size, shard.owners, i).size));
      slices_.push_back({group, shard.slice.offset, shard.slice.size, block.unit_begin, counted || shard.sharded, name,
                         static_cast<int>(b), counts, shard.mine()});
    } else {
      for (int u = block.unit_end - 1; u >= block.unit_begin; u--)
        slices_.push_back({group, layout.unit_offset(u), layout.unit_size(u), u, counted,
                           units_name(u, u + 1, L) + " of " + name, static_cast<int>(b), {},
                           {layout.unit_offset(u), layout.unit_size(u)}});
    }
  }
  if (ctx.tied.is_member() && !tied_first) {
    // The first stage's wte is final with unit 0; a last stage's head copy with unit L+1. Last
    // in the order on every rank, so that NCCL's in-order streams see one order everywhere.
    const bool first = layout.has_embedding();
    const size_t wte = first ? layout.wte() : layout.head_wte();
    slices_.push_back({&ctx.tied, wte, layout.wte_size(), first ? 0 : L + 1, ctx.tied.members().front() == ctx.world_rank,
                       "the tied word embedding", -1, {}, {wte, layout.wte_size()}});
  }
  reached_.assign(slices_.size(), false);
  if (mode != GradSyncMode::flat) {
    const bool direct = mpi_reads_device_buffers(device, MpiTraffic::nonblocking_collective);  // the all-gathers
    for (const Slice& s : slices_) {
      if (s.shard_counts.empty()) {
        reducer_->add_slice(*s.group, grads + s.offset, s.size, "reduction of " + s.name);
        continue;
      }
      reducer_->add_owner_slice(*s.group, grads + s.offset, s.shard_counts, "reduction to the shards' owners of " + s.name);
      param_slices_.push_back({s.group, WireBuffer(device, params + s.offset, s.size, direct), s.shard_counts,
                               "all-gather of the updated shards of " + s.name});
    }
    return;
  }
  // The stage's units are contiguous in both layouts; its wte (embedding or head copy) goes to
  // the model's one wte, so the flat sum adds both uses of it as the tied group would.
  placements_.push_back({layout.unit_offset(mine.begin), whole.unit_offset(mine.begin),
                         layout.unit_offset(mine.end - 1) + layout.unit_size(mine.end - 1) - layout.unit_offset(mine.begin)});
  if (layout.has_embedding() || layout.has_head())
    placements_.push_back({layout.has_embedding() ? layout.wte() : layout.head_wte(), whole.wte(), layout.wte_size()});
  whole_ = kernels::DeviceBuffer<float>(device, whole.size());
  reducer_->add_slice(ctx.flat, whole_.data(), whole.size(), "flat reduction of the whole model");
}

void GradSync::flat_sum() {
  device_.fill_zero(whole_.data(), whole_.size());
  for (const Placement& p : placements_)
    device_.copy(whole_.data() + p.whole_offset, grads_ + p.stage_offset, p.size * sizeof(float));
  reducer_->start(0);
  reducer_->finish();
  for (const Placement& p : placements_)
    device_.copy(grads_ + p.stage_offset, whole_.data() + p.whole_offset, p.size * sizeof(float));
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
  } else if (mode_ == GradSyncMode::flat) {
    flat_sum();
  } else {
    for (size_t i = 0; i < slices_.size(); i++) {  // the baseline: one sum at a time
      reducer_->start(static_cast<int>(i));
      reducer_->finish();
    }
  }
  reached_.assign(slices_.size(), false);
  next_start_ = 0;
}

void GradSync::gather_params() {
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

double GradSync::owned_sum_of_squares(kernels::Backend& backend, std::string& nonfinite) const {
  double sum = 0.0;
  for (const Slice& s : slices_) {
    if (!s.counted_here) continue;
    const double squares = backend.sum_of_squares(grads_ + s.own.offset, s.own.size);
    if (!std::isfinite(squares)) nonfinite += (nonfinite.empty() ? "" : ", ") + s.name;
    sum += squares;
  }
  return sum;
}

GradSync::Range GradSync::block_range(int block) const {
  Range range;
  for (const Slice& s : slices_) {  // per-layer mode: the block's units, adjacent
    if (s.block != block) continue;
    const size_t end = std::max(range.offset + range.size, s.offset + s.size);
    range.offset = range.size == 0 ? s.offset : std::min(range.offset, s.offset);
    range.size = end - range.offset;
  }
  return range;
}

int GradSync::collectives_per_step() const {
  if (mode_ == GradSyncMode::flat) return 1;
  int n = 0;
  for (const Slice& s : slices_) n += s.group->size() > 1;  // a group of one reduces nothing
  return n;
}

}  // namespace eth

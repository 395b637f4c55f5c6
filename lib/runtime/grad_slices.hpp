// The slices of a stage's gradients that gradient sync reduces, in one global order: backward
// finishes units from the top down, so blocks are listed from the top of the model down, the tied
// word embedding last; or, where it is summed early (lib/runtime/late_embedding_rows.hpp), first.
// Every rank lists its slices in this order, so that in-order streams (NCCL) see one order.
#pragma once

#include <string>
#include <vector>

#include "lib/model/float_range.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/plan/optimizer_shards.hpp"
#include "lib/runtime/parallel_context.hpp"

namespace eth {

// The unit reported before the step's last backward starts (GradSync::unit_done).
constexpr int kLastBackwardBegins = -1;

struct GradSlice {
  const ProcessGroup* group;
  size_t offset, size;
  int start_unit;                 // the unit whose completion makes the slice final
  bool counted_here;              // this rank counts it in the norm
  std::string name;               // "block 1 (layers 1-2)", for messages
  int block;                      // its block, -1 for the tied embedding
  std::vector<size_t> shard_counts;  // a sharded block: its owners' shard sizes; else empty
  FloatRange own;                 // what this rank counts: its shard, or the whole slice
};

// One slice per block this stage holds (per_unit: one per unit of it, for the per-layer
// baseline), and the tied embedding's where this rank is a member of its group: first when
// `tied_first`, else last. shards: the stage's blocks (block_shards).
std::vector<GradSlice> grad_slices(const ParallelContext& ctx, const ParamLayout& layout, bool per_unit, bool tied_first,
                                   const std::vector<BlockShard>& shards);

}  // namespace eth

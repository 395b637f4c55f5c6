// Optimizer-state sharding (ZeRO-1) inside each gradient block's owner group.
//
// A block (lib/plan/grad_blocks.hpp) of k > 1 owners is one contiguous slice of each owner's
// parameters, in the same order on every owner. Which blocks are sharded is the plan's choice
// (Plan::sharded_blocks) or, with --shard-optimizer, every one of k > 1. A sharded block's slice is cut into k
// shards; owner i (its position among the block's owners, ascending) receives only shard i's
// gradient sum, keeps AdamW moments only for shard i, updates shard i, and the owners then
// all-gather the updated parameters. The tied word embedding is not in any block and stays
// unsharded. Everything here is arithmetic on the plan; the collectives are grad_sync.hpp's.
#pragma once

#include <cstddef>
#include <vector>

#include "lib/model/float_range.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/plan/grad_blocks.hpp"
#include "lib/plan/plan.hpp"

namespace eth {

// Shard r of n floats split among k owners: [n*r/k, n*(r+1)/k). Sizes differ by at most one,
// the larger ones last; they tile [0, n) in order.
FloatRange shard_span(size_t n, int k, int r);

// Where a block of this rank's stage lies in the stage layout, and this rank's shard of it.
struct BlockShard {
  int block = 0;       // index into the plan's blocks
  FloatRange slice;          // the block in the stage layout
  int owners = 1;      // k
  int index = 0;       // this rank's position among the owners
  bool sharded = false;
  FloatRange mine() const {  // this rank's shard in the stage layout (the whole slice when unsharded)
    if (!sharded) return slice;
    const FloatRange s = shard_span(slice.size, owners, index);
    return {slice.offset + s.offset, s.size};
  }
};

// Per block of `blocks` (derive_grad_blocks of `plan`, validated): whether its moments are
// sharded. The plan's sharded_blocks, and with `shard_all` (eth_train --shard-optimizer, the
// job-wide switch) every block of more than one owner besides.
std::vector<bool> sharded_block_flags(const Plan& plan, const std::vector<GradBlock>& blocks, bool shard_all);

// The blocks of `layout` (a stage held by `world_rank`), in unit order; sharded where
// `sharded[block]` (sharded_block_flags).
std::vector<BlockShard> block_shards(const std::vector<GradBlock>& blocks, const ParamLayout& layout, int world_rank,
                                     const std::vector<bool>& sharded);

// The spans of a stage layout of `layout_size` floats that this rank updates (and keeps
// moments for): everything but the other owners' shards. Ascending, disjoint, adjacent merged.
std::vector<FloatRange> updated_spans(const std::vector<BlockShard>& shards, size_t layout_size);

// Floats of AdamW moment (one of m, v) that `world_rank` (not idle) allocates under `plan`, its
// sharded blocks those of sharded_block_flags(plan, ..., shard_all).
size_t moment_floats(const ModelConfig& model, const Plan& plan, int world_rank, bool shard_all);
// The segments of that rank's AdamW table (lib/model/optimizer.hpp: adamw_segments), likewise.
size_t adamw_segment_count(const ModelConfig& model, const Plan& plan, int world_rank, bool shard_all);

}  // namespace eth

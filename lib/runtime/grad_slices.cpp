#include "lib/runtime/grad_slices.hpp"

#include <algorithm>

#include "lib/plan/grad_blocks.hpp"

namespace eth {
namespace {

GradSlice tied_slice(const ParallelContext& ctx, size_t offset, size_t size, int start_unit) {
  return {&ctx.tied, offset, size, start_unit, ctx.tied.members().front() == ctx.world_rank, "the tied word embedding",
          -1, {}, {offset, size}};
}

}  // namespace

std::vector<GradSlice> grad_slices(const ParallelContext& ctx, const ParamLayout& layout, bool per_unit, bool tied_first,
                                   const std::vector<BlockShard>& shards) {
  const int L = ctx.blocks.back().unit_end - 2;
  const LayerRange mine = stage_units(layout.layers(), L);
  std::vector<GradSlice> slices;
  if (tied_first) {  // final once the head's backward is done, or (no head) from the last backward's start
    slices.push_back(tied_slice(ctx, layout.head_wte(), layout.wte_size(), layout.has_head() ? L + 1 : kLastBackwardBegins));
  }
  for (size_t b = ctx.blocks.size(); b-- > 0;) {
    const GradBlock& block = ctx.blocks[b];
    if (block.unit_end <= mine.begin || block.unit_begin >= mine.end) continue;
    const ProcessGroup* group = &ctx.block_groups[b];
    const bool counted = block.owners.front() == ctx.world_rank;
    const std::string name = "block " + std::to_string(b) + " (" + units_name(block.unit_begin, block.unit_end, L) + ")";
    if (per_unit) {
      for (int u = block.unit_end - 1; u >= block.unit_begin; u--)
        slices.push_back({group, layout.unit_offset(u), layout.unit_size(u), u, counted,
                          units_name(u, u + 1, L) + " of " + name, static_cast<int>(b), {},
                          {layout.unit_offset(u), layout.unit_size(u)}});
      continue;
    }
    const BlockShard& shard =
        *std::find_if(shards.begin(), shards.end(), [&](const BlockShard& s) { return s.block == static_cast<int>(b); });
    std::vector<size_t> counts;
    for (int i = 0; shard.sharded && i < shard.owners; i++) counts.push_back(shard_span(shard.slice.size, shard.owners, i).size);
    slices.push_back({group, shard.slice.offset, shard.slice.size, block.unit_begin, counted || shard.sharded, name,
                      static_cast<int>(b), counts, shard.mine()});
  }
  if (ctx.tied.is_member() && !tied_first) {
    // The first stage's wte is final with unit 0; a last stage's head copy with unit L+1.
    const bool first = layout.has_embedding();
    slices.push_back(tied_slice(ctx, first ? layout.wte() : layout.head_wte(), layout.wte_size(), first ? 0 : L + 1));
  }
  return slices;
}

}  // namespace eth

#include "lib/plan/optimizer_shards.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

#include "lib/model/optimizer.hpp"

namespace eth {

FloatRange shard_span(size_t n, int k, int r) {
  assert(k > 0 && r >= 0 && r < k);
  const size_t K = static_cast<size_t>(k), R = static_cast<size_t>(r);
  const size_t begin = n * R / K, end = n * (R + 1) / K;
  return {begin, end - begin};
}

std::vector<bool> sharded_block_flags(const Plan& plan, const std::vector<GradBlock>& blocks, bool shard_all) {
  std::vector<bool> sharded(blocks.size(), false);
  for (size_t b = 0; b < blocks.size(); b++) sharded[b] = shard_all && blocks[b].owners.size() > 1;
  for (int b : plan.sharded_blocks) {
    assert(b >= 0 && static_cast<size_t>(b) < blocks.size() && blocks[b].owners.size() > 1);  // validate_plan
    sharded[b] = true;
  }
  return sharded;
}

std::vector<BlockShard> block_shards(const std::vector<GradBlock>& blocks, const ParamLayout& layout, int world_rank,
                                     const std::vector<bool>& sharded) {
  assert(sharded.size() == blocks.size());
  const int L = blocks.back().unit_end - 2;
  const LayerRange mine = stage_units(layout.layers(), L);
  std::vector<BlockShard> shards;
  for (size_t b = 0; b < blocks.size(); b++) {
    const GradBlock& block = blocks[b];
    if (block.unit_end <= mine.begin || block.unit_begin >= mine.end) continue;
    const size_t begin = layout.unit_offset(block.unit_begin);
    const size_t end = layout.unit_offset(block.unit_end - 1) + layout.unit_size(block.unit_end - 1);
    const auto me = std::find(block.owners.begin(), block.owners.end(), world_rank);
    assert(me != block.owners.end());
    const int k = static_cast<int>(block.owners.size());
    assert(!sharded[b] || k > 1);
    shards.push_back({static_cast<int>(b), {begin, end - begin}, k, static_cast<int>(me - block.owners.begin()),
                      sharded[b]});
  }
  return shards;
}

std::vector<FloatRange> updated_spans(const std::vector<BlockShard>& shards, size_t layout_size) {
  // Cut the other owners' shards out of [0, layout_size).
  std::vector<FloatRange> cuts;
  for (const BlockShard& s : shards) {
    if (!s.sharded) continue;
    const FloatRange mine = s.mine();
    cuts.push_back({s.slice.offset, mine.offset - s.slice.offset});
    cuts.push_back({mine.end(), s.slice.end() - mine.end()});
  }
  std::sort(cuts.begin(), cuts.end(), [](const FloatRange& a, const FloatRange& b) { return a.offset < b.offset; });
  std::vector<FloatRange> spans;
  size_t at = 0;
  for (const FloatRange& cut : cuts) {
    if (cut.size == 0) continue;
    if (cut.offset > at) spans.push_back({at, cut.offset - at});
    at = cut.end();
  }
  if (at < layout_size) spans.push_back({at, layout_size - at});
  return spans;
}

namespace {

// The layout of world_rank's stage and the spans of it that the rank's optimizer updates.
std::pair<ParamLayout, std::vector<FloatRange>> rank_optimizer_spans(const ModelConfig& model, const Plan& plan,
                                                                     int world_rank, bool shard_all) {
  LayerRange layers{};
  bool found = false;
  for (const PlanPipeline& pipe : plan.pipelines)
    for (const PlanStage& stage : pipe.stages)
      if (std::find(stage.ranks.begin(), stage.ranks.end(), world_rank) != stage.ranks.end()) {
        layers = stage.layers;
        found = true;
      }
  assert(found);  // not idle
  (void)found;
  ParamLayout layout(model, layers);
  const std::vector<GradBlock> blocks = derive_grad_blocks(plan, model.num_layers);
  const std::vector<BlockShard> shards =
      block_shards(blocks, layout, world_rank, sharded_block_flags(plan, blocks, shard_all));
  std::vector<FloatRange> spans = updated_spans(shards, layout.size());
  return {std::move(layout), std::move(spans)};
}

}  // namespace

size_t moment_floats(const ModelConfig& model, const Plan& plan, int world_rank, bool shard_all) {
  return total_size(rank_optimizer_spans(model, plan, world_rank, shard_all).second);
}

size_t adamw_segment_count(const ModelConfig& model, const Plan& plan, int world_rank, bool shard_all) {
  const auto [layout, spans] = rank_optimizer_spans(model, plan, world_rank, shard_all);
  return adamw_segments(layout, spans).size();
}

}  // namespace eth

// Shard ranges of sharded optimizer state: shards tile a block in member order with sizes that
// differ by at most one (k dividing the block or not, blocks smaller than k), and a rank's
// updated spans are exactly the floats it updates: everything outside sharded blocks and its own
// shard inside them, so that the owners of a block together update each float exactly once. Which
// blocks are sharded: the plan's sharded_blocks, and with --shard-optimizer every block of several
// owners besides.
#include <gtest/gtest.h>

#include <algorithm>

#include "lib/plan/optimizer_shards.hpp"

namespace eth::test {
namespace {

TEST(OptimizerShards, ShardsTileTheBlockEvenly) {
  for (size_t n : {0, 1, 2, 3, 7, 10, 12, 1000, 1001, 1003}) {
    for (int k = 1; k <= 5; k++) {
      size_t at = 0, smallest = n, largest = 0;
      for (int r = 0; r < k; r++) {
        const FloatRange s = shard_span(n, k, r);
        EXPECT_EQ(s.offset, at) << "n " << n << ", k " << k << ": shard " << r << " does not follow shard " << r - 1;
        at = s.end();
        smallest = std::min(smallest, s.size);
        largest = std::max(largest, s.size);
      }
      EXPECT_EQ(at, n) << "n " << n << ", k " << k << ": the shards do not cover the block";
      EXPECT_LE(largest - smallest, 1u) << "n " << n << ", k " << k;
    }
  }
  EXPECT_EQ(shard_span(10, 4, 0).size, 2u);  // 2, 3, 2, 3: the remainder spread, not piled on one
  EXPECT_EQ(shard_span(10, 4, 1).size, 3u);
}

// tiny-4l's shape: two pipelines, one of depth 1 (rank 0) and one of depth 2 (ranks 1, 2), so
// that every block has 2 owners.
ModelConfig tiny_model() {
  return gpt2_config("tiny", 97, 128, 16, 4, 2, 8);
}

Plan two_depths() {
  Plan plan;
  plan.global_batch = 4;
  PlanPipeline a{.micro_batch = 2, .micro_batches = 1, .stages = {{.ranks = {0}, .layers = {0, 4}}}};
  PlanPipeline b{.micro_batch = 2, .micro_batches = 1,
                 .stages = {{.ranks = {1}, .layers = {0, 1}}, {.ranks = {2}, .layers = {1, 4}}}};
  plan.pipelines = {a, b};
  return plan;
}

TEST(OptimizerShards, OwnersUpdateEveryFloatOnce) {
  const ModelConfig model = tiny_model();
  const Plan plan = two_depths();
  const std::vector<GradBlock> blocks = derive_grad_blocks(plan, model.num_layers);
  const ParamLayout whole(model, {0, 4}), first(model, {0, 1}), rest(model, {1, 4});
  const std::vector<bool> all_sharded = sharded_block_flags(plan, blocks, true);
  const std::vector<BlockShard> rank0 = block_shards(blocks, whole, 0, all_sharded);
  ASSERT_EQ(rank0.size(), blocks.size());
  // Per block: the owners' shards, each in its owner's layout, tile the block once.
  for (const BlockShard& s0 : rank0) {
    ASSERT_TRUE(s0.sharded) << "block " << s0.block << " has " << s0.owners << " owners";
    EXPECT_EQ(s0.owners, 2);
    const int other = blocks[s0.block].owners.back();
    const std::vector<BlockShard> theirs = block_shards(blocks, other == 1 ? first : rest, other, all_sharded);
    const BlockShard& s1 = *std::find_if(theirs.begin(), theirs.end(), [&](const BlockShard& s) { return s.block == s0.block; });
    EXPECT_EQ(s0.slice.size, s1.slice.size);
    EXPECT_EQ(s0.index, 0);
    EXPECT_EQ(s1.index, 1);
    EXPECT_EQ(s0.mine().offset - s0.slice.offset, 0u);
    EXPECT_EQ(s0.mine().size + s1.mine().size, s0.slice.size);
    EXPECT_EQ(s1.mine().offset - s1.slice.offset, s0.mine().size) << "block " << s0.block;
  }
  // Rank 0's updated spans: the tied embedding (in no block) and its first half of each block.
  const std::vector<FloatRange> spans = updated_spans(rank0, whole.size());
  size_t expected = whole.wte_size();
  for (const BlockShard& s : rank0) expected += s.mine().size;
  EXPECT_EQ(total_size(spans), expected);
  EXPECT_EQ(moment_floats(model, plan, 0, true), expected);
  EXPECT_EQ(moment_floats(model, plan, 0, false), whole.size());
  for (size_t i = 1; i < spans.size(); i++) EXPECT_LT(spans[i - 1].end(), spans[i].offset) << "spans not merged/ascending";
  for (const BlockShard& s : rank0) {  // the other owner's shard is in no span
    const FloatRange m = s.mine();
    for (const FloatRange& span : spans)
      EXPECT_TRUE(span.end() <= m.end() || span.offset >= s.slice.end()) << "block " << s.block << ": the other shard is updated";
  }
  // Unsharded: one span, the whole layout.
  const std::vector<FloatRange> all =
      updated_spans(block_shards(blocks, whole, 0, sharded_block_flags(plan, blocks, false)), whole.size());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].size, whole.size());
}

// Three blocks of 2 owners each: rank 0 (all layers) beside a pipeline of depth 3 (ranks 1, 2, 3).
Plan three_blocks() {
  Plan plan = two_depths();
  plan.pipelines[1].stages = {{.ranks = {1}, .layers = {0, 1}}, {.ranks = {2}, .layers = {1, 3}}, {.ranks = {3}, .layers = {3, 4}}};
  return plan;
}

TEST(OptimizerShards, PlanShardsOnlyItsBlocks) {
  const ModelConfig model = tiny_model();
  Plan plan = three_blocks();
  plan.sharded_blocks = {1};
  const std::vector<GradBlock> blocks = derive_grad_blocks(plan, model.num_layers);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(sharded_block_flags(plan, blocks, false), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(sharded_block_flags(plan, blocks, true), (std::vector<bool>{true, true, true}));  // the union
  const ParamLayout whole(model, {0, 4});
  const std::vector<BlockShard> rank0 = block_shards(blocks, whole, 0, sharded_block_flags(plan, blocks, false));
  ASSERT_EQ(rank0.size(), 3u);
  EXPECT_FALSE(rank0[0].sharded);
  EXPECT_TRUE(rank0[1].sharded);
  EXPECT_FALSE(rank0[2].sharded);
  // Rank 0 (first of block 1's owners 0, 2) updates everything but block 1's second half: two spans.
  const FloatRange b1 = rank0[1].slice;
  const FloatRange other = {b1.offset + shard_span(b1.size, 2, 0).size, shard_span(b1.size, 2, 1).size};
  const std::vector<FloatRange> spans = updated_spans(rank0, whole.size());
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].offset, 0u);
  EXPECT_EQ(spans[0].end(), other.offset);
  EXPECT_EQ(spans[1].offset, other.end());
  EXPECT_EQ(spans[1].end(), whole.size());
  EXPECT_EQ(moment_floats(model, plan, 0, false), whole.size() - other.size);
  // Rank 2 (layers 1-2, second owner of block 1) keeps its half of it: its whole stage is block 1.
  const ParamLayout middle(model, {1, 3});
  const std::vector<BlockShard> rank2 = block_shards(blocks, middle, 2, sharded_block_flags(plan, blocks, false));
  ASSERT_EQ(rank2.size(), 1u);
  EXPECT_EQ(rank2[0].slice.size, b1.size);
  EXPECT_EQ(moment_floats(model, plan, 2, false), shard_span(b1.size, 2, 1).size);
  // Rank 3 holds block 2 (and the tied embedding, in no block), which the plan leaves unsharded;
  // --shard-optimizer shards it too: rank 3, its second owner, drops the first shard.
  const size_t last = ParamLayout(model, {3, 4}).size();
  EXPECT_EQ(moment_floats(model, plan, 3, false), last);
  EXPECT_EQ(moment_floats(model, plan, 3, true), last - shard_span(rank0[2].slice.size, 2, 0).size);
  // Without the field, nothing is sharded.
  plan.sharded_blocks.clear();
  EXPECT_EQ(moment_floats(model, plan, 0, false), whole.size());
}

}  // namespace
}  // namespace eth::test

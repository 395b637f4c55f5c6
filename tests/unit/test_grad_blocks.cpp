// Block derivation on hand-made and random plans, against a brute-force definition: every unit
// in exactly one block, each block's owners exactly the ranks holding each of its units, and
// blocks maximal (neighbours differ in owners).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "lib/base/random.hpp"
#include "lib/plan/grad_blocks.hpp"

namespace eth::test {
namespace {

// Ranks holding unit u, straight from the definition.
std::vector<int> owners_of_unit(const Plan& plan, int u, int L) {
  std::vector<int> owners;
  for (const PlanPipeline& pipe : plan.pipelines)
    for (const PlanStage& stage : pipe.stages) {
      const LayerRange units = stage_units(stage.layers, L);
      if (units.begin <= u && u < units.end) owners.insert(owners.end(), stage.ranks.begin(), stage.ranks.end());
    }
  std::sort(owners.begin(), owners.end());
  return owners;
}

void check_blocks(const Plan& plan, int L) {
  const std::vector<GradBlock> blocks = derive_grad_blocks(plan, L);
  ASSERT_FALSE(blocks.empty());
  EXPECT_EQ(blocks.front().unit_begin, 0);
  EXPECT_EQ(blocks.back().unit_end, L + 2);
  for (size_t b = 0; b < blocks.size(); b++) {
    const GradBlock& block = blocks[b];
    ASSERT_LT(block.unit_begin, block.unit_end) << "block " << b << " is empty";
    if (b > 0) {
      EXPECT_EQ(block.unit_begin, blocks[b - 1].unit_end) << "gap or overlap before block " << b;
      EXPECT_NE(block.owners, blocks[b - 1].owners) << "blocks " << b - 1 << " and " << b << " are not maximal";
    }
    for (int u = block.unit_begin; u < block.unit_end; u++)
      EXPECT_EQ(block.owners, owners_of_unit(plan, u, L)) << "unit " << u << " in block " << b;
  }
}

PlanStage stage(std::vector<int> ranks, int begin, int end) { return {std::move(ranks), {begin, end}, {}}; }

TEST(GradBlocks, TwoPipelinesOfDifferentDepth) {
  // L = 4. Pipeline 0: rank 0 holds all; pipeline 1: ranks 1 | 2 split at layer 2.
  Plan plan;
  plan.pipelines = {{1, 1, {stage({0}, 0, 4)}}, {1, 1, {stage({1}, 0, 2), stage({2}, 2, 4)}}};
  const std::vector<GradBlock> blocks = derive_grad_blocks(plan, 4);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].unit_begin, 0);  // embedding + layers 0, 1
  EXPECT_EQ(blocks[0].unit_end, 3);
  EXPECT_EQ(blocks[0].owners, (std::vector<int>{0, 1}));
  EXPECT_EQ(blocks[1].unit_end, 6);    // layers 2, 3 + final norm
  EXPECT_EQ(blocks[1].owners, (std::vector<int>{0, 2}));
  EXPECT_EQ(tied_embedding_group(plan), (std::vector<int>{0, 1, 2}));
  check_blocks(plan, 4);
}

TEST(GradBlocks, UnitsAreNamedAsPlansCountLayers) {
  // L = 4: unit 0 the embedding, units 1-4 layers 0-3, unit 5 the final layernorm.
  EXPECT_EQ(units_name(0, 2, 4), "embedding + layer 0");
  EXPECT_EQ(units_name(2, 4, 4), "layers 1-2");
  EXPECT_EQ(units_name(4, 6, 4), "layer 3 + final layernorm");
  EXPECT_EQ(units_name(0, 6, 4), "embedding + layers 0-3 + final layernorm");
  EXPECT_EQ(units_name(5, 6, 4), "final layernorm");
}

TEST(GradBlocks, OnePipelineHasOneRankPerBlock) {
  Plan plan;
  plan.pipelines = {{2, 2, {stage({3}, 0, 1), stage({1, 2}, 1, 3), stage({0}, 3, 5)}}};
  plan.pipelines[0].stages[1].split = {1, 1};
  const std::vector<GradBlock> blocks = derive_grad_blocks(plan, 5);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[1].owners, (std::vector<int>{1, 2}));  // a stage of two ranks reduces between them
  EXPECT_EQ(tied_embedding_group(plan), (std::vector<int>{0, 3}));
  check_blocks(plan, 5);
}

// A random valid plan over `world` ranks of an L-layer model.
Plan random_plan(uint64_t seed, int L, int world) {
  auto draw = [seed, i = uint64_t{0}](int n) mutable { return static_cast<int>(uniform_at(seed, i++) * n); };
  std::vector<int> ranks(static_cast<size_t>(world));
  std::iota(ranks.begin(), ranks.end(), 0);
  for (int i = world - 1; i > 0; i--) std::swap(ranks[i], ranks[draw(i + 1)]);
  Plan plan;
  size_t next = 0;
  while (next < ranks.size()) {
    const int left = world - static_cast<int>(next);
    const int depth = 1 + draw(std::min({L, left, 4}));
    std::vector<int> cuts = {0, L};  // depth - 1 distinct interior cuts
    while (static_cast<int>(cuts.size()) < depth + 1) {
      const int c = 1 + draw(L - 1);
      if (std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
    }
    std::sort(cuts.begin(), cuts.end());
    PlanPipeline pipe{1, 1, {}};
    for (int s = 0; s < depth; s++) {
      const int spare = world - static_cast<int>(next) - (depth - s);
      const int width = 1 + (spare > 0 ? draw(std::min(spare, 2) + 1) : 0);
      std::vector<int> members(ranks.begin() + next, ranks.begin() + next + width);
      next += width;
      pipe.stages.push_back(stage(members, cuts[s], cuts[s + 1]));
    }
    plan.pipelines.push_back(pipe);
  }
  return plan;
}

TEST(GradBlocks, RandomPlansMatchTheDefinition) {
  for (uint64_t seed = 1; seed <= 500; seed++) {
    const int L = 2 + static_cast<int>(seed % 11);
    const int world = 1 + static_cast<int>(seed % 13);
    SCOPED_TRACE("seed " + std::to_string(seed));
    check_blocks(random_plan(seed, L, world), L);
  }
}

}  // namespace
}  // namespace eth::test

// Online re-balancing without MPI: the shared water-filling, the re-balanced split of a plan
// for measured rates (valid, the same global batch, faster under the model), the hysteresis that
// keeps a balanced split, and the slowdown switch's parsing.
#include <gtest/gtest.h>

#include <numeric>

#include "lib/plan/batch_balance.hpp"
#include "lib/runtime/rebalance.hpp"
#include "lib/runtime/slowdown.hpp"
#include "tests/unit/expect_input_error.hpp"

namespace eth::test {
namespace {

PlanStage stage(std::vector<int> ranks, int begin, int end, std::vector<int> split = {}) {
  return {std::move(ranks), {begin, end}, std::move(split)};
}

// tests/mpi/plans/rebalance-4.yaml: pipeline 0 = ranks {0, 1} (2:2) | 2, micro-batch 4 x 2;
// pipeline 1 = rank 3, micro-batch 2 x 2; global batch 12.
Plan two_pipelines() {
  Plan plan;
  plan.source = "test";
  plan.global_batch = 12;
  plan.pipelines = {{4, 2, {stage({0, 1}, 0, 2, {2, 2}), stage({2}, 2, 4)}}, {2, 2, {stage({3}, 0, 4)}}};
  return plan;
}

int total_samples(const Plan& plan) {
  int n = 0;
  for (const PlanPipeline& p : plan.pipelines) n += p.samples();
  return n;
}

TEST(BalanceSamples, EqualPipelinesShareEvenly) {
  const std::vector<PipelineRate> pipes(2, PipelineRate{1.0, 2.0, 2, 1});
  double ms = 0;
  const auto samples = balance_samples(pipes, 8, &ms);
  ASSERT_TRUE(samples);
  EXPECT_EQ(*samples, (std::vector<int>{4, 4}));
  EXPECT_DOUBLE_EQ(ms, 3.0);  // 2 micro-batches: 1 x 1 + 2
}

TEST(BalanceSamples, LeftOverBecomesASmallerLastMicroBatch) {
  // Pipeline 1 is three times as fast: it takes most; 13 samples leave 1 over a micro-batch of 2.
  const std::vector<PipelineRate> pipes = {{3.0, 3.0, 2, 1}, {1.0, 1.0, 2, 1}};
  const auto samples = balance_samples(pipes, 13);
  ASSERT_TRUE(samples);
  EXPECT_EQ((*samples)[0] + (*samples)[1], 13);
  EXPECT_GT((*samples)[1], 2 * (*samples)[0]);
  EXPECT_EQ(((*samples)[0] % 2) + ((*samples)[1] % 2), 1);  // one pipeline runs a last micro-batch of 1
}

TEST(BalanceSamples, LeftOverBelowEveryMinimumMakesNoSplit) {
  // 9 samples at micro-batch 4 leave 1, but a stage of 2 ranks needs at least 2 in a micro-batch.
  const std::vector<PipelineRate> pipes = {{1.0, 1.0, 4, 2}, {1.0, 1.0, 4, 2}};
  EXPECT_FALSE(balance_samples(pipes, 9));
  EXPECT_FALSE(balance_samples(pipes, 7));  // less than one micro-batch per pipeline
}

TEST(Rebalance, SlowRankGetsFewerSamples) {
  const Plan plan = two_pipelines();
  const std::vector<double> rates = {4.0, 1.0, 1.0, 1.0};  // rank 0 four times as slow per sample
  const std::optional<Plan> next = rebalanced_plan(plan, rates);
  ASSERT_TRUE(next);
  EXPECT_EQ(total_samples(*next), 12);
  const std::vector<int>& split = next->pipelines[0].stages[0].split;
  EXPECT_LT(split[0], split[1]) << split[0] << ":" << split[1];
  EXPECT_LT(predicted_step_ms(*next, rates), predicted_step_ms(plan, rates));
  EXPECT_TRUE(same_stages(plan, *next));
  const std::vector<int> per_rank = samples_per_step(*next, 4);
  EXPECT_EQ(per_rank[0] + per_rank[1], next->pipelines[0].samples());
  EXPECT_EQ(per_rank[2], next->pipelines[0].samples());
  EXPECT_EQ(per_rank[3], next->pipelines[1].samples());
}

// A resume under the same stages takes a checkpoint's re-balanced split, and nothing else: the
// resuming plan's recomputation and sharded blocks stay.
TEST(Rebalance, WithBatchSplitTakesOnlyTheSplit) {
  Plan written = two_pipelines();
  written.sharded_blocks = {0};
  const std::optional<Plan> split = rebalanced_plan(written, {4.0, 1.0, 1.0, 1.0});
  ASSERT_TRUE(split);
  Plan resuming = two_pipelines();
  resuming.pipelines[0].stages[1].recompute = Recompute::full;
  const Plan plan = with_batch_split(resuming, *split);
  EXPECT_TRUE(plan.sharded_blocks.empty());
  EXPECT_EQ(plan.pipelines[0].stages[1].recompute, Recompute::full);
  EXPECT_EQ(plan_yaml(with_batch_split(written, plan)), plan_yaml(*split));  // the split is all that moved
  for (size_t k = 0; k < plan.pipelines.size(); k++) {
    EXPECT_EQ(plan.pipelines[k].micro_batches, split->pipelines[k].micro_batches);
    EXPECT_EQ(plan.pipelines[k].last_micro_batch, split->pipelines[k].last_micro_batch);
    EXPECT_EQ(plan.pipelines[k].stages[0].split, split->pipelines[k].stages[0].split);
  }
}

TEST(Rebalance, ShortLastMicroBatchIsSplitWithinTheFullShares) {
  Plan plan = two_pipelines();
  plan.global_batch = 13;  // odd: whole micro-batches of 4 and 2 cannot add up to it
  plan.pipelines[1].micro_batches = 3;
  plan.pipelines[1].last_micro_batch = 1;
  const std::vector<double> rates = {1.0, 3.0, 1.0, 1.0};
  const std::optional<Plan> next = rebalanced_plan(plan, rates);
  ASSERT_TRUE(next);
  EXPECT_EQ(total_samples(*next), 13);
  bool short_last = false;
  for (const PlanPipeline& p : next->pipelines) {
    short_last = short_last || p.short_last();
    for (const PlanStage& s : p.stages) {
      if (!p.short_last() || s.ranks.size() < 2) continue;
      ASSERT_EQ(s.last_split.size(), s.split.size());
      EXPECT_EQ(std::accumulate(s.last_split.begin(), s.last_split.end(), 0), p.last_micro_batch);
      for (size_t i = 0; i < s.split.size(); i++) EXPECT_LE(s.last_split[i], s.split[i]);
    }
  }
  EXPECT_TRUE(short_last);
  // The plan's own checks accept it (rank_roles reads last_split).
  const std::vector<RankRole> roles = rank_roles(*next, 4);
  EXPECT_GE(roles[0].last_samples, 1);
}

TEST(Rebalance, DecidesOnlyEveryNStepsAndAboveTheThreshold) {
  const Plan plan = two_pipelines();
  Rebalancer rebalancer({2, 0.05}, 4);
  // Every rank 1 ms per sample.
  const std::vector<int> samples = samples_per_step(plan, 4);
  std::vector<double> compute(4);
  for (int r = 0; r < 4; r++) compute[r] = samples[r] * 1.0;
  rebalancer.observe(plan, compute);
  EXPECT_FALSE(rebalancer.decide(plan, 0));  // step 1: not a decision step
  // Rank 1 eight times as slow: proposed at step 4, confirmed and taken at step 6.
  compute[1] *= 8;
  for (int i = 0; i < 4; i++) rebalancer.observe(plan, compute);
  EXPECT_FALSE(rebalancer.decide(plan, 3));
  rebalancer.observe(plan, compute);
  EXPECT_FALSE(rebalancer.decide(plan, 4));  // step 5: not a decision step
  const std::optional<RebalanceDecision> d = rebalancer.decide(plan, 5);
  ASSERT_TRUE(d);
  EXPECT_GE(d->gain(), 0.05);
  EXPECT_LT(d->plan.pipelines[0].stages[0].split[1], 2);
  // Off: never.
  Rebalancer off({0, 0.05}, 4);
  off.observe(plan, compute);
  EXPECT_FALSE(off.decide(plan, 1));
  EXPECT_FALSE(off.decide(plan, 3));
}

TEST(Rebalance, ASpikeSeenOnceMovesNothing) {
  const std::optional<Plan> best = rebalanced_plan(two_pipelines(), {1.0, 1.0, 1.0, 1.0});
  ASSERT_TRUE(best);
  const std::vector<int> samples = samples_per_step(*best, 4);
  auto compute = [&](double rank1) {
    std::vector<double> ms(4);
    for (int r = 0; r < 4; r++) ms[r] = samples[r] * (r == 1 ? rank1 : 1.0);
    return ms;
  };
  // Rank 1 eight times as slow at one decision, back to normal by the next: no change.
  Rebalancer rebalancer({1, 0.05}, 4);
  rebalancer.observe(*best, compute(8.0));
  EXPECT_FALSE(rebalancer.decide(*best, 0));
  for (int i = 0; i < 8; i++) rebalancer.observe(*best, compute(1.0));  // the spike forgotten
  EXPECT_FALSE(rebalancer.decide(*best, 1));
  // Slow for good: seen at two decisions in a row, the second one changes the split.
  for (int i = 0; i < 8; i++) rebalancer.observe(*best, compute(8.0));
  EXPECT_FALSE(rebalancer.decide(*best, 2));
  EXPECT_TRUE(rebalancer.decide(*best, 3));
}

TEST(Rebalance, HysteresisKeepsANearlyBalancedSplit) {
  const Plan plan = two_pipelines();
  const std::optional<Plan> best = rebalanced_plan(plan, {1.0, 1.0, 1.0, 1.0});
  ASSERT_TRUE(best);
  // Rank 3 (pipeline 1 alone) measured 30% slower: moving 2 of its 8 samples to pipeline 0 is
  // predicted 10.0 instead of 10.4 ms, a gain below the 5% threshold, so only a rebalancer
  // without hysteresis moves.
  std::vector<double> compute;
  const std::vector<int> samples = samples_per_step(*best, 4);
  for (int r = 0; r < 4; r++) compute.push_back(samples[r] * (r == 3 ? 1.3 : 1.0));
  Rebalancer eager({1, 0.0}, 4), steady({1, 0.05}, 4);
  eager.observe(*best, compute);
  steady.observe(*best, compute);
  EXPECT_FALSE(eager.decide(*best, 0));  // proposed,
  const std::optional<RebalanceDecision> moved = eager.decide(*best, 1);  // and confirmed
  ASSERT_TRUE(moved);
  EXPECT_GT(moved->gain(), 0.0);
  EXPECT_LT(moved->gain(), 0.05);
  EXPECT_FALSE(steady.decide(*best, 0));
  EXPECT_FALSE(steady.decide(*best, 1));
  // And a split that is already the best for the rates is never proposed again.
  Rebalancer settled({1, 0.0}, 4);
  const std::vector<int> again = samples_per_step(moved->plan, 4);
  std::vector<double> same;
  for (int r = 0; r < 4; r++) same.push_back(again[r] * (r == 3 ? 1.3 : 1.0));
  settled.observe(moved->plan, same);
  EXPECT_FALSE(settled.decide(moved->plan, 0));
  EXPECT_FALSE(settled.decide(moved->plan, 1));
}

TEST(Slowdown, ParsesAndTakesTheLatestRule) {
  const std::vector<SlowdownRule> rules = {parse_slowdown("1:2:10"), parse_slowdown("1:1:20"), parse_slowdown("2:3.5:1")};
  EXPECT_EQ(slowdown_factor(rules, 1, 8), 1.0);    // step 9
  EXPECT_EQ(slowdown_factor(rules, 1, 9), 2.0);    // step 10
  EXPECT_EQ(slowdown_factor(rules, 1, 19), 1.0);   // step 20: ended
  EXPECT_EQ(slowdown_factor(rules, 2, 0), 3.5);
  EXPECT_EQ(slowdown_factor(rules, 0, 5), 1.0);
  for (const char* bad : {"1:2", "1:0.5:3", "-1:2:3", "1:2:0", "a:b:c", "1:2:3x"})
    expect_input_error([&] { parse_slowdown(bad); }, {"--slowdown", "RANK:FACTOR:STEP", bad});
}

}  // namespace
}  // namespace eth::test

// Topology and plan files: the shipped examples load, files round-trip, and every invariant a
// plan can break is reported with the file and the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "lib/plan/plan.hpp"
#include "lib/plan/plan_validation.hpp"
#include "lib/plan/topology.hpp"
#include "tests/unit/expect_input_error.hpp"
#include "tests/unit/scratch_dir_test.hpp"

namespace eth::test {
namespace {

class PlanFiles : public ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    topology_ = load_topology("inputs/topologies/workstation-4cpu.yaml");
    model_.num_layers = 4;
  }
  // Loads and validates plan text against the 4-rank workstation and a 4-layer model.
  Plan check(const std::string& text) {
    Plan plan = load_plan(write_text("plan.yaml", text));
    validate_plan(plan, topology_, model_);
    return plan;
  }
  void expect_plan_error(const std::string& text, const std::vector<std::string>& fragments) {
    const std::string path = ScratchDirTest::path("plan.yaml");
    std::vector<std::string> all = fragments;
    all.push_back(path);
    expect_input_error([&] { check(text); }, all);
  }

  Topology topology_;
  ModelConfig model_;
};

// Two pipelines on 4 ranks: rank 0 alone, and ranks 1, 2 | 3 with a 3:1 split.
const char* kGoodPlan = R"(
global_batch: 12
pipelines:
  - micro_batch: 2
    micro_batches: 2
    stages:
      - {ranks: [0], layers: [0, 4]}
  - micro_batch: 4
    micro_batches: 2
    stages:
      - {ranks: [1, 2], layers: [0, 1], split: [3, 1]}
      - {ranks: [3], layers: [1, 4]}
)";

std::string edit(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST_F(PlanFiles, ShippedTopologiesLoad) {
  EXPECT_EQ(topology_.world_size(), 4);
  const Topology lab = load_topology("inputs/topologies/lab-2node-a100-v100.yaml");
  EXPECT_EQ(lab.world_size(), 8);
  EXPECT_EQ(lab.ranks[5].node, 1);
  EXPECT_EQ(lab.ranks[5].local_rank, 1);
  EXPECT_EQ(lab.device_of(5).name, "V100-32GB");
  const Topology cluster = load_topology("inputs/topologies/cluster-h100-a100-t4.yaml");
  EXPECT_EQ(cluster.world_size(), 40);
  EXPECT_EQ(cluster.nodes.size(), 6u);
  EXPECT_EQ(cluster.nodes[3].name, "a100-1");
  EXPECT_EQ(cluster.device_of(39).name, "T4-16GB");
}

TEST_F(PlanFiles, TopologyRoundTrips) {
  const Topology cluster = load_topology("inputs/topologies/cluster-h100-a100-t4.yaml");
  const std::string path = ScratchDirTest::path("t.yaml");
  save_topology(cluster, path);
  const Topology back = load_topology(path);
  ASSERT_EQ(back.world_size(), cluster.world_size());
  for (int r = 0; r < back.world_size(); r++) {
    EXPECT_EQ(back.ranks[r].node, cluster.ranks[r].node);
    EXPECT_EQ(back.device_of(r).name, cluster.device_of(r).name);
  }
  EXPECT_EQ(back.device_types[0].peak_tflops_bf16, 989);
  EXPECT_EQ(back.nodes[4].link.kind, "pcie");
  EXPECT_EQ(back.network.bandwidth_gbs, 25);
}

TEST_F(PlanFiles, TopologyUnknownDeviceType) {
  const std::string path = write_text("t.yaml", R"(
device_types: [{name: a, memory_gb: 1, peak_tflops: {fp32: 1}, memory_bandwidth_gbs: 1}]
network: {kind: ethernet, bandwidth_gbs: 1, latency_us: 1}
nodes: [{name: n, link: {kind: pcie, bandwidth_gbs: 1, latency_us: 1}, devices: [a, {type: b, count: 2}]}]
)");
  expect_input_error([&] { load_topology(path); }, {path, "nodes[0].devices[1].type", "a name listed under device_types", "'b'"});
}

TEST_F(PlanFiles, TopologyMissingPeakRate) {
  const std::string path = write_text("t.yaml", R"(
device_types: [{name: a, memory_gb: 1, peak_tflops: {bf16: 1}, memory_bandwidth_gbs: 1}]
network: {kind: ethernet, bandwidth_gbs: 1, latency_us: 1}
nodes: [{name: n, link: {kind: pcie, bandwidth_gbs: 1, latency_us: 1}, devices: [a]}]
)");
  expect_input_error([&] { load_topology(path); }, {path, "device_types[0].peak_tflops.fp32", "missing"});
}

TEST_F(PlanFiles, TopologyMissingNestedMapping) {
  const std::string path = write_text("t.yaml", R"(
device_types: [{name: a, memory_gb: 1, memory_bandwidth_gbs: 1}]
network: {kind: ethernet, bandwidth_gbs: 1, latency_us: 1}
nodes: [{name: n, link: {kind: pcie, bandwidth_gbs: 1, latency_us: 1}, devices: [a]}]
)");
  expect_input_error([&] { load_topology(path); }, {path, "device_types[0].peak_tflops", "a mapping with 'fp32'", "missing"});
}

TEST_F(PlanFiles, GoodPlanAndRoles) {
  const Plan plan = check(kGoodPlan);
  EXPECT_EQ(plan.first_sample(1), 4);
  const std::vector<RankRole> roles = rank_roles(plan, 4);
  EXPECT_EQ(roles[2].pipeline, 1);
  EXPECT_EQ(roles[2].stage, 0);
  EXPECT_EQ(roles[2].index_in_stage, 1);
  EXPECT_EQ(roles[2].sample_offset, 3);
  EXPECT_EQ(roles[2].samples, 1);
  EXPECT_EQ(roles[3].samples, 4);
}

TEST_F(PlanFiles, PlanRoundTrips) {
  Plan plan = check(kGoodPlan);
  plan.predicted = {12.5, {10.0, 12.5}, {1, 2, 2, 3}};
  const std::string path = ScratchDirTest::path("again.yaml");
  save_plan(plan, path);
  Plan back = load_plan(path);
  validate_plan(back, topology_, model_);
  EXPECT_EQ(back.pipelines[1].stages[0].split, (std::vector<int>{3, 1}));
  EXPECT_EQ(back.pipelines[1].stages[1].layers, (LayerRange{1, 4}));
  EXPECT_EQ(back.predicted.memory_gb[3], 3);
}

// The split online re-balancing writes: pipeline 1 runs 4 + 3 samples, its wide stage 3:1 then 2:1.
std::string short_last_plan() {
  return edit(edit(edit(kGoodPlan, "global_batch: 12", "global_batch: 11"), "micro_batch: 4\n    micro_batches: 2\n",
                   "micro_batch: 4\n    micro_batches: 2\n    last_micro_batch: 3\n"),
              "split: [3, 1]", "split: [3, 1], last_split: [2, 1]");
}

TEST_F(PlanFiles, ShortLastMicroBatchRolesAndRoundTrip) {
  const Plan plan = check(short_last_plan());
  EXPECT_EQ(plan.pipelines[1].samples(), 7);
  EXPECT_EQ(plan.pipelines[1].rows(0), 4);
  EXPECT_EQ(plan.pipelines[1].rows(1), 3);
  const std::vector<RankRole> roles = rank_roles(plan, 4);
  EXPECT_EQ(roles[2].samples, 1);
  EXPECT_EQ(roles[2].last_offset, 2);
  EXPECT_EQ(roles[2].last_samples, 1);
  EXPECT_EQ(roles[3].last_samples, 3);  // a stage of one rank takes the whole last micro-batch
  EXPECT_EQ(roles[0].last_samples, roles[0].samples);  // pipeline 0's last micro-batch is full
  const Plan back = plan_from_yaml(plan_yaml(plan), "again");
  validate_plan(back, topology_, model_);
  EXPECT_EQ(back.pipelines[1].last_micro_batch, 3);
  EXPECT_EQ(back.pipelines[1].stages[0].last_split, (std::vector<int>{2, 1}));
}

// Recomputation per stage: none unless given, read and written back; written only where not none.
TEST_F(PlanFiles, RecomputeReadAndWritten) {
  const Plan plan = check(edit(edit(kGoodPlan, "split: [3, 1]}", "split: [3, 1], recompute: full}"),
                               "layers: [1, 4]}", "layers: [1, 4], recompute: selective}"));
  EXPECT_EQ(plan.pipelines[0].stages[0].recompute, Recompute::none);
  EXPECT_EQ(plan.pipelines[1].stages[0].recompute, Recompute::full);
  EXPECT_EQ(plan.pipelines[1].stages[1].recompute, Recompute::selective);
  const std::string text = plan_yaml(plan);
  const Plan back = plan_from_yaml(text, "again");
  EXPECT_EQ(back.pipelines[1].stages[0].recompute, Recompute::full);
  EXPECT_EQ(back.pipelines[1].stages[1].recompute, Recompute::selective);
  EXPECT_EQ(text.find("recompute: none"), std::string::npos) << text;
}

// Sharded optimizer state per block: kGoodPlan's blocks are 0 (embedding + layer 0, ranks 0, 1, 2)
// and 1 (layers 1-3 + final layernorm, ranks 0, 3). None unless given; read and written back.
TEST_F(PlanFiles, ShardedBlocksReadAndWritten) {
  EXPECT_TRUE(check(kGoodPlan).sharded_blocks.empty());
  EXPECT_EQ(plan_yaml(check(kGoodPlan)).find("sharded_blocks"), std::string::npos);
  const Plan plan = check(std::string(kGoodPlan) + "sharded_blocks: [1, 0]\n");
  EXPECT_EQ(plan.sharded_blocks, (std::vector<int>{1, 0}));
  const Plan back = plan_from_yaml(plan_yaml(plan), "again");
  validate_plan(back, topology_, model_);
  EXPECT_EQ(back.sharded_blocks, (std::vector<int>{1, 0}));
}

TEST_F(PlanFiles, ShardedBlockOutOfRange) {
  expect_plan_error(std::string(kGoodPlan) + "sharded_blocks: [0, 2]\n",
                    {"sharded_blocks[1]", "a block index below 2", "block 0 holds the embedding", "got 2"});
}

TEST_F(PlanFiles, ShardedBlockNegative) {
  expect_plan_error(std::string(kGoodPlan) + "sharded_blocks: [-1]\n", {"sharded_blocks[0]", "got -1"});
}

TEST_F(PlanFiles, ShardedBlockTwice) {
  expect_plan_error(std::string(kGoodPlan) + "sharded_blocks: [1, 1]\n",
                    {"sharded_blocks[1]", "each block once", "block 1 (layers 1-3 + final layernorm) again"});
}

// One pipeline: blocks 0 (ranks 0, 1), 1 (rank 2 alone), 2 (rank 3 alone).
TEST_F(PlanFiles, ShardedBlockOfOneOwner) {
  std::ifstream file("tests/mpi/plans/one-pipeline-4.yaml");
  const std::string one_pipeline((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(one_pipeline.empty()) << "tests/mpi/plans/one-pipeline-4.yaml not found from " << std::filesystem::current_path();
  EXPECT_EQ(check(one_pipeline + "sharded_blocks: [0]\n").sharded_blocks, (std::vector<int>{0}));
  expect_plan_error(one_pipeline + "sharded_blocks: [0, 1]\n",
                    {"sharded_blocks[1]", "at least two owners", "block 1 (layer 2), held by rank 2 alone"});
}

TEST_F(PlanFiles, RecomputeUnknown) {
  expect_plan_error(edit(kGoodPlan, "layers: [1, 4]}", "layers: [1, 4], recompute: attention}"),
                    {"pipelines[1].stages[1].recompute", "none, selective or full", "attention"});
}

TEST_F(PlanFiles, LastMicroBatchNotSmaller) {
  expect_plan_error(edit(short_last_plan(), "last_micro_batch: 3", "last_micro_batch: 4"),
                    {"pipelines[1].last_micro_batch", "fewer samples than micro_batch 4", "got 4"});
}

TEST_F(PlanFiles, LastSplitAboveFullShare) {
  expect_plan_error(edit(short_last_plan(), "last_split: [2, 1]", "last_split: [1, 2]"),
                    {"pipelines[1].stages[0].last_split[1]", "1 to split[1] = 1 samples", "got 2"});
}

TEST_F(PlanFiles, LastSplitDoesNotAddUp) {
  expect_plan_error(edit(short_last_plan(), "last_split: [2, 1]", "last_split: [1, 1]"),
                    {"pipelines[1].stages[0].last_split", "adding up to last_micro_batch 3", "sum of 2"});
}

TEST_F(PlanFiles, RankOutOfRange) {
  expect_plan_error(edit(kGoodPlan, "ranks: [3]", "ranks: [4]"),
                    {"pipelines[1].stages[1].ranks[0]", "below 4", "workstation-4cpu.yaml", "got 4"});
}

TEST_F(PlanFiles, RankUsedTwice) {
  expect_plan_error(edit(kGoodPlan, "ranks: [3]", "ranks: [0]"),
                    {"pipelines[1].stages[1].ranks[0]", "in no other stage", "already in pipelines[0].stages[0]"});
}

TEST_F(PlanFiles, RankInNoStage) {
  expect_plan_error(edit(edit(kGoodPlan, "ranks: [1, 2]", "ranks: [1]"), "split: [3, 1]", "split: [4]"),
                    {"pipelines", "every rank 0..3", "rank 2 in none"});
}

TEST_F(PlanFiles, LayersOverlap) {
  expect_plan_error(edit(kGoodPlan, "layers: [1, 4]", "layers: [0, 4]"),
                    {"pipelines[1].stages[1].layers", "continuing where the previous stage ends", "got [0, 4)"});
}

TEST_F(PlanFiles, LayersMissing) {
  expect_plan_error(edit(kGoodPlan, "layers: [1, 4]", "layers: [2, 4]"), {"pipelines[1].stages[1].layers", "got [2, 4)"});
}

TEST_F(PlanFiles, LayersShort) {
  expect_plan_error(edit(kGoodPlan, "layers: [0, 4]", "layers: [0, 3]"),
                    {"pipelines[0].stages[0].layers", "end at layer 4", "got end 3"});
}

TEST_F(PlanFiles, SplitDoesNotAddUp) {
  expect_plan_error(edit(kGoodPlan, "split: [3, 1]", "split: [2, 1]"),
                    {"pipelines[1].stages[0].split", "adding up to micro_batch 4", "sum of 3"});
}

TEST_F(PlanFiles, SplitMissing) {
  expect_plan_error(edit(kGoodPlan, ", split: [3, 1]", ""), {"pipelines[1].stages[0].split", "2 sample counts", "got 0"});
}

TEST_F(PlanFiles, SamplesDoNotAddUp) {
  expect_plan_error(edit(kGoodPlan, "global_batch: 12", "global_batch: 16"),
                    {"global_batch", "micro_batch x micro_batches = 12", "got 16"});
}

TEST_F(PlanFiles, PredictedMemoryTooLarge) {
  expect_plan_error(std::string(kGoodPlan) + "predicted: {memory_gb: [1, 1, 6, 1]}\n",
                    {"predicted.memory_gb[2]", "at most 5 GB", "cpu-rank", "got 6 GB"});
}

TEST_F(PlanFiles, MalformedField) {
  expect_plan_error(edit(kGoodPlan, "micro_batches: 2\n    stages:\n      - {ranks: [1, 2]", "micro_batches: two\n    stages:\n      - {ranks: [1, 2]"),
                    {"pipelines[1].micro_batches", "an integer", "'two'"});
}

}  // namespace
}  // namespace eth::test

// The planner: the layer-partition DP against brute force (stages of one and of several ranks),
// the memory model against the stage's own allocation, the simulator against hand-computed
// 1F1B, every emitted plan valid, wide stages found where they win, identical devices planned
// like Megatron, and bad input named by file and field.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "lib/model/optimizer.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"
#include "lib/plan/grad_blocks.hpp"
#include "lib/plan/optimizer_shards.hpp"
#include "lib/plan/plan_validation.hpp"
#include "lib/plan/schedule.hpp"
#include "lib/planner/local_search.hpp"
#include "lib/planner/partition.hpp"
#include "lib/planner/scenario.hpp"
#include "lib/planner/search.hpp"
#include "tests/unit/expect_input_error.hpp"


namespace eth::test {
namespace {

using namespace eth::planner;

ModelConfig small_model(int layers) {
  return gpt2_config("small", 97, 128, 64, layers, 4, 64);
}

// One node of the given device types (memory GB, fp32 TFLOPS) with fast links.
Topology one_node(const std::vector<std::pair<double, double>>& devices, double bandwidth_gbs = 100) {
  Topology t;
  t.source = "test-topology";
  t.network = {"ethernet", bandwidth_gbs, 0};
  Node node{"n0", {"nvlink", bandwidth_gbs, 0}, {}, 0};
  for (size_t i = 0; i < devices.size(); i++) {
    t.device_types.push_back({.name = "dev" + std::to_string(i), .memory_gb = devices[i].first,
                              .peak_tflops_fp32 = devices[i].second, .memory_bandwidth_gbs = 100});
    node.devices.push_back(static_cast<int>(i));
    t.ranks.push_back({0, static_cast<int>(i), static_cast<int>(i)});
  }
  t.nodes.push_back(node);
  return t;
}

CostModel roofline_cost(const Topology& topo, const ModelConfig& model, int T) {
  return CostModel(topo, model, T, profiles_for(topo, model, T, {}, {1, 2, 4, 8}, figures_paths(topo)));
}

// A shipped scenario (inputs/scenarios/NAME.yaml) under roofline profiles, with its request for
// the best plan; tests take its parts by structured binding.
struct ShippedScenario {
  explicit ShippedScenario(const std::string& name)
      : s(load_scenario("inputs/scenarios/" + name + ".yaml")), topo(load_topology(s.topology_path)),
        model(load_model_config(s.model_path)), cost(roofline_cost(topo, model, s.seq_len)),
        request{s.global_batch, s.micro_batches, 1} {}
  Scenario s;
  Topology topo;
  ModelConfig model;
  CostModel cost;
  PlanRequest request;
};

// Every other trial has stages of up to 3 ranks of mixed device types, which split each
// micro-batch by speed.
TEST(Planner, PartitionEqualsBruteForce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 80; trial++) {
    const int L = 2 + static_cast<int>(rng() % 7), S = 1 + static_cast<int>(rng() % std::min(L, 4));
    const int max_width = trial % 2 ? 3 : 1;
    std::vector<std::pair<double, double>> devices;
    StageRanks stages(S);
    for (int s = 0; s < S; s++) {
      const int width = 1 + static_cast<int>(rng() % max_width);
      for (int i = 0; i < width; i++) {
        stages[s].push_back(static_cast<int>(devices.size()));
        devices.push_back({0.004 + 0.001 * (rng() % 20), 1.0 + (rng() % 30)});  // some stages memory-bound
      }
    }
    const Topology topo = one_node(devices, 1 + rng() % 50);
    const ModelConfig model = small_model(L);
    const CostModel cost = roofline_cost(topo, model, 16);
    const int b = max_width + static_cast<int>(rng() % 4);
    // The reference cost of stage k holding r, from the cost model's primitives (not StageCost):
    // every rank at its share of the split, plus one transfer across each boundary.
    auto reference = [&](int k, LayerRange r, double* ms) {
      const std::vector<int> split = stage_split(cost, stages[k], b);
      double slowest = 0;
      for (size_t i = 0; i < stages[k].size(); i++) {
        const int type = topo.ranks[stages[k][i]].device_type;
        if (cost.memory_bytes(r, split[i], S - k) > cost.device_bytes(type)) return false;
        slowest = std::max(slowest, cost.compute(type, r, split[i]).total());
      }
      const PlanStage here = plan_stage(cost, stages[k], r, b);
      if (k > 0) slowest += cost.boundary_ms(plan_stage(cost, stages[k - 1], r, b), here, b);
      if (k + 1 < S) slowest += cost.boundary_ms(here, plan_stage(cost, stages[k + 1], r, b), b);
      *ms = slowest;
      return true;
    };
    // Brute force: every composition of L into S positive parts.
    double best = -1;
    std::vector<int> cut(S + 1, 0);
    std::function<void(int, int)> rec = [&](int s, int at) {
      if (s == S - 1) {
        cut[S] = L;
        double worst = 0;
        for (int k = 0; k < S; k++) {
          double ms = 0;
          if (!reference(k, {cut[k], cut[k + 1]}, &ms)) return;
          worst = std::max(worst, ms);
        }
        if (best < 0 || worst < best) best = worst;
        return;
      }
      for (int next = at + 1; next <= L - (S - s - 1); next++) {
        cut[s + 1] = next;
        rec(s + 1, next);
      }
    };
    rec(0, 0);
    const std::optional<Partition> dp = partition_layers(cost, stages, b);
    ASSERT_EQ(dp.has_value(), best >= 0) << "trial " << trial << " L " << L << " S " << S;
    if (dp) {
      EXPECT_NEAR(dp->max_stage_ms, best, 1e-9 * best) << "trial " << trial << " L " << L << " S " << S;
    }
  }
}

// At a short T (the CPU backend keeps attention's (B, NH, T, T) probabilities) and a long one
// (it keeps lse (B, NH, T)): the planner counts what the CPU backend's stage allocates.
TEST(Planner, MemoryModelMatchesStageAllocation) {
  ModelConfig model = small_model(5);
  model.max_seq_len = 160;
  const Topology topo = one_node({{80, 10}});
  const auto cpu = kernels::make_cpu_backend();
  for (int T : {16, 160}) {
    const CostModel cost = roofline_cost(topo, model, T);
    for (LayerRange r : {LayerRange{0, 5}, LayerRange{0, 2}, LayerRange{2, 4}, LayerRange{3, 5}}) {
      for (int b : {1, 3}) {
        for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
          const ParamLayout layout(model, r);
          EXPECT_EQ(cost.param_floats(r), double(layout.size())) << r.begin << ".." << r.end;
          const Stage::ActivationFootprint fp =
              Stage::activation_footprint(model, r, b, T, cpu->attention_path(T), cpu->storage(), mode);
          const double BT = double(T) * b;
          const double tokens = (r.begin == 0 ? BT * 2 : 0) + (r.end == 5 ? BT : 0);
          // fp32 masters, gradients, two moments; AdamW's segment table; token ids; activations.
          const double table = double(sizeof(kernels::AdamWSegment) * adamw_segments(layout, {{0, layout.size()}}).size());
          EXPECT_EQ(cost.memory_bytes(r, b, 2, mode),
                    16.0 * layout.size() + table + 4.0 * tokens + double(fp.per_slot * 2 + fp.scratch))
              << "T " << T << " " << r.begin << ".." << r.end << " b " << b << " " << to_string(mode);
        }
      }
    }
  }
}

// The memory estimate (eth_plan --evaluate) drops the two moments of the shards a rank does not
// keep: in the plan's sharded_blocks, and with set_shard_optimizer in every block of several owners.
TEST(Planner, MemoryCountsShardedBlocks) {
  const ModelConfig model = small_model(4);
  const Topology topo = one_node({{80, 10}, {80, 10}, {80, 10}});
  CostModel cost = roofline_cost(topo, model, 16);
  // Rank 0 holds all layers, ranks 1 | 2 split them at layer 2: blocks 0 (embedding + layers 0-1,
  // ranks 0 and 1) and 1 (layers 2-3 + final layernorm, ranks 0 and 2).
  Plan plan;
  plan.global_batch = 4;
  plan.pipelines = {{2, 1, {{{0}, {0, 4}, {}}}}, {2, 1, {{{1}, {0, 2}, {}}, {{2}, {2, 4}, {}}}}};
  const std::vector<double> whole = cost.estimate(plan).memory_gb;
  const size_t n0 = ParamLayout(model, {0, 2}).size() - ParamLayout(model, {0, 2}).wte_size();
  const size_t n1 = ParamLayout(model, {0, 4}).size() - ParamLayout(model, {0, 2}).size();
  // 8 bytes (m and v) per float of the other owner's shard, and AdamW's segment table shrinks
  // with it; the estimate's GB are doubles of bytes * 1e-9, so differences of them are exact to
  // ~1e-16 GB of ~1e-3: 1e-12 is rounding only.
  const Plan unsharded = plan;
  auto dropped = [&](size_t floats, int rank, bool shard_all) {
    const size_t table = adamw_segment_count(model, unsharded, rank, false) -
                         adamw_segment_count(model, plan, rank, shard_all);
    return (8.0 * double(floats) + double(sizeof(kernels::AdamWSegment) * table)) * 1e-9;
  };
  plan.sharded_blocks = {1};
  const std::vector<double> some = cost.estimate(plan).memory_gb;
  EXPECT_NEAR(whole[0] - some[0], dropped(shard_span(n1, 2, 1).size, 0, false), 1e-12);  // rank 0 keeps shard 0
  EXPECT_NEAR(whole[1] - some[1], dropped(0, 1, false), 1e-12);                           // block 0 unsharded
  EXPECT_NEAR(whole[2] - some[2], dropped(shard_span(n1, 2, 0).size, 2, false), 1e-12);
  cost.set_shard_optimizer(true);  // the union: block 0 as well
  const std::vector<double> all = cost.estimate(plan).memory_gb;
  EXPECT_NEAR(whole[0] - all[0], dropped(shard_span(n0, 2, 1).size + shard_span(n1, 2, 1).size, 0, true), 1e-12);
  EXPECT_NEAR(whole[1] - all[1], dropped(shard_span(n0, 2, 0).size, 1, true), 1e-12);
}

// A profile with fixed times, for hand computation.
Profile fixed_profile(const std::string& type, const ModelConfig& model, int T, double f, double bw) {
  Profile p;
  p.source = "test";
  p.device_type = type;
  p.model = model.name;
  p.seq_len = T;
  ProfileEntry e;
  e.micro_batch = 1;
  e.layer = {f, bw, 0, 0};
  p.entries = {e};
  return p;
}

TEST(Planner, SimulatorMatchesHandComputed1F1B) {
  const ModelConfig model = small_model(4);
  const Topology topo = one_node({{80, 10}, {80, 10}, {80, 10}, {80, 10}}, 1e12);
  std::vector<Profile> profiles;
  for (int t = 0; t < 4; t++) profiles.push_back(fixed_profile("dev" + std::to_string(t), model, 16, 1.0, 2.0));
  const CostModel cost(topo, model, 16, profiles);
  for (int S : {1, 2, 4}) {
    for (int m : {1, 3, 8}) {
      Plan plan;
      plan.global_batch = 0;
      const int P = 4 / S;
      for (int p = 0; p < P; p++) {
        PlanPipeline pipe;
        pipe.micro_batch = 1;
        pipe.micro_batches = m;
        for (int s = 0; s < S; s++) pipe.stages.push_back({{p * S + s}, {s * 4 / S, (s + 1) * 4 / S}, {}});
        plan.pipelines.push_back(pipe);
        plan.global_batch += m;
      }
      const Simulation sim = simulate(cost, plan);
      const double stage = 3.0 * 4 / S;  // (f + b) per layer times layers per stage
      EXPECT_NEAR(sim.iteration_ms, (m + S - 1) * stage, 1e-6) << "S " << S << " m " << m;
      EXPECT_NEAR(cost.estimate(plan).iteration_ms, (m + S - 1) * stage, 1e-6) << "S " << S << " m " << m;
    }
  }
}

// Sums of different groups that span the same nodes take turns on those nodes' NICs. Two nodes
// of two ranks, two pipelines of two one-rank stages across them: the blocks {0, 2} and {1, 3}
// share no rank but both cross between the nodes, so with compute free every sum (blocks, tied
// embedding and its late rows' gather) runs after another: the step is the sum of all of them
// and the stage-to-stage transfers before (one channel per rank alone would let the two blocks
// overlap, ending a block's time earlier).
TEST(Planner, SimulatorSharesANodesNic) {
  const ModelConfig model = small_model(4);
  const Topology topo = topology_from_yaml(R"(
device_types: [{name: dev, memory_gb: 80, peak_tflops: {fp32: 10}, memory_bandwidth_gbs: 100}]
network: {kind: ethernet, bandwidth_gbs: 1, latency_us: 10}
nodes: [{name: n, count: 2, link: {kind: nvlink, bandwidth_gbs: 100, latency_us: 1}, devices: [{type: dev, count: 2}]}]
)", "test");
  const CostModel cost(topo, model, 16, {fixed_profile("dev", model, 16, 0.0, 0.0)});
  const Plan plan = plan_from_yaml(R"(
global_batch: 2
pipelines:
  - {micro_batch: 1, micro_batches: 1, stages: [{ranks: [0], layers: [0, 2]}, {ranks: [1], layers: [2, 4]}]}
  - {micro_batch: 1, micro_batches: 1, stages: [{ranks: [2], layers: [0, 2]}, {ranks: [3], layers: [2, 4]}]}
)", "test");
  double all = 0, shortest_block = 1e30;
  for (const Reduction& r : plan_reductions(cost, plan)) {
    all += r.ms;
    if (r.unit_begin >= 0) shortest_block = std::min(shortest_block, r.ms);
  }
  ASSERT_GT(shortest_block, 0.0);
  const Simulation sim = simulate(cost, plan);
  const double transfers = *std::max_element(sim.pipeline_ms.begin(), sim.pipeline_ms.end());
  ASSERT_LT(transfers, shortest_block / 10);
  EXPECT_GE(sim.iteration_ms, all);
  EXPECT_LE(sim.iteration_ms, all + transfers);
}

// Recomputation is charged to backward: S = 2, m = 3, f = 1 and b = 2 ms per layer, two layers
// per stage. Full on both stages re-runs stage 0's forward (2 ms) in each of its backwards; stage
// 1 holds one micro-batch at a time, whose backward follows its forward, so it repeats nothing.
// Stage 0 then takes 2 + 6 ms per micro-batch, stage 1 2 + 4; the 1F1B timeline by hand: 28 ms
// (24 without recomputation); the analytic (m - 1) max + sum: 2 * 8 + 14 = 30.
TEST(Planner, RecomputationChargedToBackward) {
  const ModelConfig model = small_model(4);
  const Topology topo = one_node({{80, 10}, {80, 10}}, 1e12);
  const std::vector<Profile> profiles = {fixed_profile("dev0", model, 16, 1.0, 2.0), fixed_profile("dev1", model, 16, 1.0, 2.0)};
  const CostModel cost(topo, model, 16, profiles);
  auto plan_with = [](Recompute mode) {
    Plan plan;
    plan.global_batch = 3;
    PlanPipeline pipe;
    pipe.micro_batches = 3;
    pipe.stages = {{{0}, {0, 2}, {}, {}, mode}, {{1}, {2, 4}, {}, {}, mode}};
    plan.pipelines = {pipe};
    return plan;
  };
  EXPECT_NEAR(simulate(cost, plan_with(Recompute::none)).iteration_ms, 24, 1e-9);
  EXPECT_NEAR(simulate(cost, plan_with(Recompute::full)).iteration_ms, 28, 1e-9);
  EXPECT_NEAR(cost.estimate(plan_with(Recompute::full)).iteration_ms, 30, 1e-9);
  // Selective repeats the attention half of each layer's forward, on every stage.
  const Plan selective = plan_with(Recompute::selective);
  const double share = cost.attention_share();
  EXPECT_GT(share, 0.1);
  EXPECT_LT(share, 0.5);
  for (int s : {0, 1})
    EXPECT_NEAR(rank_compute(cost, selective.pipelines[0], s, 0).backward, 4 + 2 * share, 1e-12) << "stage " << s;
}

// On 16 GB cards a 7.3B model fits no pipeline that keeps every activation: the search says
// which rank misses and by how much. Allowed to recompute, it forms a plan, and each stage
// recomputes the least that fits: one step lighter would not fit some rank of the stage.
TEST(Planner, RecomputesWhereNothingFitsOtherwise) {
  ShippedScenario scenario("16gb-cards");
  auto& [s, topo, model, cost, request] = scenario;
  cost.set_allow_recompute(false);
  expect_input_error([&] { search_hpp(cost, request, s.source); },
                     {s.topology_path, "device_types (rank ", "16 GB", "GB more than its 16 GB", "no recomputation"});
  cost.set_allow_recompute(true);
  const Candidate best = search_hpp(cost, request, s.source).front();
  Plan plan = best.plan;
  EXPECT_NO_THROW(validate_plan(plan, topo, model));  // its predicted memory fits every device
  int recomputing = 0;
  for (const PlanPipeline& pipe : plan.pipelines)
    for (size_t k = 0; k < pipe.stages.size(); k++) {
      const PlanStage& st = pipe.stages[k];
      if (st.recompute == Recompute::none) continue;
      recomputing++;
      const int slots = activation_slots(static_cast<int>(k), static_cast<int>(pipe.stages.size()), pipe.micro_batches);
      const Recompute lighter = Recompute(static_cast<int>(st.recompute) - 1);
      bool some_rank_misses = false;
      for (size_t i = 0; i < st.ranks.size(); i++) {
        const int b = st.split.empty() ? pipe.micro_batch : st.split[i];
        some_rank_misses = some_rank_misses ||
                           cost.memory_bytes(st.layers, b, slots, lighter) > cost.device_bytes(topo.ranks[st.ranks[i]].device_type);
      }
      EXPECT_TRUE(some_rank_misses) << "stage " << k << " recomputes " << to_string(st.recompute) << " needlessly";
    }
  EXPECT_GT(recomputing, 0);
  // The estimate's memory per rank is the sum of its parts, and within the device.
  for (int r = 0; r < topo.world_size(); r++) {
    EXPECT_NEAR(best.estimate.memory[r].total() * 1e-9, best.estimate.memory_gb[r], 1e-12);
    EXPECT_LE(best.estimate.memory_gb[r], topo.device_of(r).memory_gb);
  }
}

// Where memory does not bind, recomputation changes nothing: the same plan, none recomputed.
TEST(Planner, NoRecomputationWhereMemoryDoesNotBind) {
  ShippedScenario scenario("a100-t4");
  auto& [s, topo, model, cost, request] = scenario;
  const Candidate allowed = search_hpp(cost, request, s.source).front();
  cost.set_allow_recompute(false);
  const Candidate forbidden = search_hpp(cost, request, s.source).front();
  EXPECT_EQ(allowed.label, forbidden.label);
  EXPECT_EQ(allowed.simulation.iteration_ms, forbidden.simulation.iteration_ms);
  for (const PlanPipeline& pipe : allowed.plan.pipelines)
    for (const PlanStage& st : pipe.stages) EXPECT_EQ(st.recompute, Recompute::none);
}

// A sharded block's collective moves (k - 1)/k of its bytes through each owner: over the node's
// link inside one node; across nodes over the network, each NIC carrying all its node's owners.
TEST(Planner, ShardedCollectiveTime) {
  Topology topo = one_node({{80, 10}, {80, 10}, {80, 10}, {80, 10}}, 10);  // 10 GB/s: 1e7 bytes per ms
  const ModelConfig model = small_model(2);
  const CostModel inside(topo, model, 16, profiles_for(topo, model, 16, {}, {1}, figures_paths(topo)));
  EXPECT_NEAR(inside.sharded_collective_ms({0, 1, 2, 3}, 4e7), 3.0, 1e-12);  // 3/4 of 4e7 bytes
  EXPECT_EQ(inside.sharded_collective_ms({2}, 4e7), 0);
  // Ranks 2 and 3 on a second node, a 1 GB/s network: three owners, two behind node 0's NIC.
  topo.network = {"ethernet", 1, 0};
  topo.nodes[0].devices = {0, 1};
  topo.nodes.push_back({"n1", {"nvlink", 10, 0}, {2, 3}, 2});
  topo.ranks[2] = {1, 0, 2};
  topo.ranks[3] = {1, 1, 3};
  const CostModel across(topo, model, 16, profiles_for(topo, model, 16, {}, {1}, figures_paths(topo)));
  EXPECT_NEAR(across.sharded_collective_ms({0, 1, 2}, 3e6), 2 * 2e6 / 1e6, 1e-12);
}

// The search shards a block where the simulator says it pays (here: AdamW over half the block
// saves more than the all-gather after it costs), keeps every sharded block of several owners,
// and shards nothing when not allowed.
TEST(Planner, ShardsBlocksWhereItPays) {
  ShippedScenario scenario("homogeneous-16");
  auto& [s, topo, model, cost, request] = scenario;
  const Candidate best = search_hpp(cost, request, s.source).front();
  ASSERT_FALSE(best.plan.sharded_blocks.empty()) << best.label;
  EXPECT_NO_THROW(validate_plan(best.plan, topo, model));
  Plan unsharded = best.plan;
  unsharded.sharded_blocks.clear();
  ASSERT_TRUE(choose_recompute(cost, unsharded));
  EXPECT_LT(best.simulation.iteration_ms, simulate(cost, unsharded).iteration_ms);
  const std::vector<GradBlock> blocks = derive_grad_blocks(best.plan, model.num_layers);
  for (int b : best.plan.sharded_blocks) EXPECT_GE(blocks[b].owners.size(), 2u);
  // Sharded moments: 8 bytes per float of the other owners' shards less on each owner.
  const Estimate whole = cost.estimate(unsharded);
  for (int r = 0; r < topo.world_size(); r++)
    EXPECT_LE(best.estimate.memory[r].optimizer, whole.memory[r].optimizer) << "rank " << r;
  cost.set_allow_sharding(false);
  EXPECT_TRUE(search_hpp(cost, request, s.source).front().plan.sharded_blocks.empty());
}

struct ScenarioCase {
  std::string path;
  int global_batch;
};

TEST(Planner, EveryEmittedPlanIsValid) {
  for (const char* name : {"uneven-17", "a100-t4", "no-uniform-fit", "homogeneous-16", "2a100-6t4-b16"}) {
    ShippedScenario scenario(name);
    scenario.request.top = 4;
    const auto& [s, topo, model, cost, request] = scenario;
    std::vector<Candidate> all = search_hpp(cost, request, s.source);
    ASSERT_FALSE(all.empty());
    const double hpp = all.front().simulation.iteration_ms;
    const PlanRequest narrow{s.global_batch, s.micro_batches, 1, 1};  // one rank per stage: guards the
                                                                       // construction that makes HPP never slower
    all.push_back(search_hpp(cost, narrow, s.source).front());
    EXPECT_LE(hpp, all.back().simulation.iteration_ms * (1 + 1e-12)) << name;
    all.push_back(baseline_layer_balanced(cost, request, s.source));
    EXPECT_LE(hpp, all.back().simulation.iteration_ms * (1 + 1e-12)) << name;
    if (std::string(name) != "no-uniform-fit") {
      all.push_back(baseline_uniform(cost, request, s.source));
      EXPECT_LE(hpp, all.back().simulation.iteration_ms * (1 + 1e-12)) << name;
    }
    for (const Candidate& c : all) {
      EXPECT_NO_THROW(validate_plan(c.plan, topo, model)) << name << ": " << c.label;
      // Deterministic: the same inputs give the same plan.
    }
    const std::vector<Candidate> again = search_hpp(cost, request, s.source);
    EXPECT_EQ(again.front().label, all.front().label);
    EXPECT_EQ(again.front().simulation.iteration_ms, all.front().simulation.iteration_ms);
  }
}

// A measured profile under which the sample balance's rounding once left micro-batches
// unassigned, so that the "fastest" plan trained half the batch.
TEST(Planner, SampleBalanceCoversTheBatch) {
  const Topology topo = load_topology("tests/unit/data/planner-2cpu-topology.yaml");
  const ModelConfig model = load_model_config("inputs/models/demo.yaml");
  const CostModel cost(topo, model, 64, {load_profile("tests/unit/data/planner-2cpu-profile.yaml")});
  const PlanRequest request{16, {1, 2, 4, 8}, 4};
  for (const Candidate& c : search_hpp(cost, request, "planner-2cpu")) {
    EXPECT_NO_THROW(validate_plan(c.plan, topo, model)) << c.label;
  }
}

// At scale the candidates must be ranked with their gradient reductions: the linear pipeline
// model alone ranks first the layouts whose cross-node block reductions lose to layer-balanced.
// With the analytic ranking, wide stages inside nodes win (simulated, estimate profiles).
TEST(Planner, BeatsLayerBalancedAtScale) {
  const ShippedScenario scenario("256gpu-3types");
  const auto& [s, topo, model, cost, request] = scenario;
  const Candidate hpp = search_hpp(cost, request, s.source).front();
  const Candidate balanced = baseline_layer_balanced(cost, request, s.source);
  EXPECT_LT(hpp.simulation.iteration_ms, 0.85 * balanced.simulation.iteration_ms) << hpp.label << " vs " << balanced.label;
}

TEST(Planner, IdenticalDevicesGiveTheUniformPlan) {
  const ModelConfig model = small_model(8);
  const Topology topo = one_node({{80, 10}, {80, 10}, {80, 10}, {80, 10}});
  Topology same = topo;  // one device type for all four
  same.device_types.resize(1);
  for (RankPlace& r : same.ranks) r.device_type = 0;
  for (int& d : same.nodes[0].devices) d = 0;
  CostModel cost = roofline_cost(same, model, 16);
  cost.set_allow_sharding(false);  // the layout is the claim; sharding would speed up both alike
  const PlanRequest request{16, {1, 2, 4}, 1};
  const Candidate hpp = search_hpp(cost, request, "test").front();
  const Candidate uniform = baseline_uniform(cost, request, "test");
  EXPECT_NEAR(hpp.simulation.iteration_ms, uniform.simulation.iteration_ms, 1e-9 * uniform.simulation.iteration_ms);
  int samples = hpp.plan.pipelines.front().samples();
  for (const PlanPipeline& pipe : hpp.plan.pipelines) {
    EXPECT_EQ(pipe.samples(), samples);
    for (const PlanStage& st : pipe.stages) EXPECT_EQ(st.layers.count(), 8 / static_cast<int>(pipe.stages.size()));
  }
}

TEST(Planner, SplitBySpeed) {
  EXPECT_EQ(split_by_speed(8, {1, 1}), (std::vector<int>{4, 4}));
  EXPECT_EQ(split_by_speed(8, {3, 1}), (std::vector<int>{6, 2}));
  EXPECT_EQ(split_by_speed(3, {100, 1, 1}), (std::vector<int>{1, 1, 1}));
}

// A stage's split follows its devices' layer speed; its time is its slowest rank's.
TEST(Planner, StageOfSeveralRanks) {
  const ModelConfig model = small_model(4);
  Topology topo = one_node({{80, 30}, {80, 10}, {80, 10}});
  topo.device_types[0].memory_bandwidth_gbs = 300;  // device 0: 3x faster in every respect
  const CostModel cost = roofline_cost(topo, model, 16);
  EXPECT_EQ(stage_split(cost, {1, 2}, 8), (std::vector<int>{4, 4}));
  EXPECT_TRUE(stage_split(cost, {0, 1, 2}, 2).empty());  // fewer samples than ranks
  const std::vector<int> split = stage_split(cost, {0, 1}, 8);
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[0] + split[1], 8);
  EXPECT_GT(split[0], split[1]);  // the faster device takes more
  const StageRanks stages = {{0, 1}};
  const StageCost stage(cost, stages, 0, 8);
  const LayerRange all{0, 4};
  EXPECT_DOUBLE_EQ(stage.ms(all), std::max(cost.compute(0, all, split[0]).total(), cost.compute(1, all, split[1]).total()));
  const PlanStage planned = plan_stage(cost, {0, 1}, all, 8);
  EXPECT_EQ(planned.split, split);
}

// 16 nodes of 2 GPUs of three types: the search's plan has stages of several ranks (sharing a
// micro-batch's samples), and a request for one rank per stage gets none, refinement included.
// No speed claim: the two searches refine different starts, and the one-rank-per-stage search
// ends faster here (4050 vs 4192 ms simulated; docs/results.md lists both for every scenario).
// On a100-3t4-b8, where wide stages once won by 1.47x, leaving the T4s idle now beats both.
TEST(Planner, WideStagesStayWithinTheRequest) {
  ShippedScenario scenario("16nodes-2gpu-3types");
  auto& [s, topo, model, cost, request] = scenario;
  const Candidate wide = search_hpp(cost, request, s.source).front();
  request.max_stage_width = 1;
  const Candidate narrow = search_hpp(cost, request, s.source).front();
  EXPECT_NO_THROW(validate_plan(wide.plan, topo, model));
  auto widest = [](const Plan& plan) {
    size_t w = 0;
    for (const PlanPipeline& pipe : plan.pipelines)
      for (const PlanStage& st : pipe.stages) w = std::max(w, st.ranks.size());
    return w;
  };
  EXPECT_GE(widest(wide.plan), 2u) << wide.label;
  EXPECT_EQ(widest(narrow.plan), 1u) << narrow.label;
  EXPECT_NO_THROW(validate_plan(narrow.plan, topo, model));
}

// The Metis-style baseline: its plans pass validate_plan (memory included) and replay in the
// simulator as reported.
TEST(Planner, MetisBaselinePlansAreValid) {
  for (const char* name : {"a100-3t4-b8", "uneven-17", "no-uniform-fit", "small-mem-prime-13"}) {
    const ShippedScenario scenario(name);
    const auto& [s, topo, model, cost, request] = scenario;
    const Candidate metis = baseline_metis(cost, request, s.source);
    EXPECT_EQ(metis.label.rfind("metis P=", 0), 0u) << name << ": " << metis.label;
    EXPECT_NO_THROW(validate_plan(metis.plan, topo, model)) << name << ": " << metis.label;
    EXPECT_GT(metis.simulation.iteration_ms, 0) << name;
    EXPECT_EQ(simulate(cost, metis.plan).iteration_ms, metis.simulation.iteration_ms) << name;
    // Identical pipelines: the same device types per stage, the same layers.
    const PlanPipeline& first = metis.plan.pipelines.front();
    for (const PlanPipeline& pipe : metis.plan.pipelines) {
      ASSERT_EQ(pipe.stages.size(), first.stages.size()) << name;
      for (size_t st = 0; st < pipe.stages.size(); st++) {
        EXPECT_EQ(pipe.stages[st].layers, first.stages[st].layers) << name;
        EXPECT_EQ(pipe.stages[st].ranks.size(), first.stages[st].ranks.size()) << name;
      }
    }
  }
}

// On identical devices there is nothing for device groups to balance: Metis plans like the
// uniform and layer-balanced baselines, within 2% (its wide stages change only the transfers
// and reductions a little).
TEST(Planner, MetisOnIdenticalDevicesMatchesTheBaselines) {
  const ShippedScenario scenario("homogeneous-16");
  const auto& [s, topo, model, cost, request] = scenario;
  const double metis = baseline_metis(cost, request, s.source).simulation.iteration_ms;
  const double uniform = baseline_uniform(cost, request, s.source).simulation.iteration_ms;
  const double balanced = baseline_layer_balanced(cost, request, s.source).simulation.iteration_ms;
  EXPECT_NEAR(metis / uniform, 1.0, 0.02);
  EXPECT_NEAR(metis / balanced, 1.0, 0.02);
}

// One fast device beside three slow ones of the same memory, a small batch: a pipeline over
// them idles in the bubble, and one stage of all four sharing each micro-batch by speed (a stage
// of two device types, which the layer-balanced baseline cannot form) is faster. Metis finds it.
TEST(Planner, MetisFormsMixedStagesWhereTheyHelp) {
  const ModelConfig model = small_model(8);
  Topology topo = one_node({{80, 30}, {80, 10}, {80, 10}, {80, 10}});
  topo.device_types.resize(2);  // ranks 1-3 of one slow type
  for (size_t r = 1; r < topo.ranks.size(); r++) topo.ranks[r].device_type = topo.nodes[0].devices[r] = 1;
  const CostModel cost = roofline_cost(topo, model, 64);
  const PlanRequest request{8, {1, 2, 4, 8}, 1};
  const Candidate metis = baseline_metis(cost, request, "test");
  EXPECT_NO_THROW(validate_plan(metis.plan, topo, model));
  bool mixed = false;
  for (const PlanPipeline& pipe : metis.plan.pipelines)
    for (const PlanStage& st : pipe.stages)
      for (int r : st.ranks) mixed = mixed || topo.ranks[r].device_type != topo.ranks[st.ranks.front()].device_type;
  EXPECT_TRUE(mixed) << metis.label;
  const Candidate balanced = baseline_layer_balanced(cost, request, "test");
  EXPECT_LT(metis.simulation.iteration_ms, balanced.simulation.iteration_ms) << metis.label << " vs " << balanced.label;
}

// HPP takes the device-group plans as candidates (search.cpp): where stages mixing device types
// win, as on 64gpu-4types (16 L4 and 16 T4 sharing a layer), HPP's plan is at least as fast as
// the Metis baseline's (the same simulator: equal up to rounding), and it validates.
TEST(Planner, HppIsNeverBehindTheDeviceGroupSearch) {
  const ShippedScenario scenario("64gpu-4types");
  const auto& [s, topo, model, cost, request] = scenario;
  const Candidate hpp = search_hpp(cost, request, s.source).front();
  const Candidate metis = baseline_metis(cost, request, s.source);
  EXPECT_LE(hpp.simulation.iteration_ms, metis.simulation.iteration_ms * (1 + 1e-12)) << hpp.label << " vs " << metis.label;
  EXPECT_NO_THROW(validate_plan(hpp.plan, topo, model)) << hpp.label;
}

// The local search returns a valid plan never slower than its best start, and the same plan for
// the same seed.
TEST(Planner, LocalSearchNeverWorseThanItsStart) {
  const ShippedScenario scenario("a100-3t4-b8");
  const auto& [s, topo, model, cost, request] = scenario;
  const Candidate start = baseline_uniform(cost, request, s.source);
  LocalSearchOptions options;
  options.iterations = 400;
  options.random_starts = 0;
  options.seed = 3;
  const LocalSearchResult a = local_search(cost, request, {start}, options, s.source);
  EXPECT_LE(a.best.simulation.iteration_ms, start.simulation.iteration_ms);
  EXPECT_LT(a.best.simulation.iteration_ms, 0.9 * start.simulation.iteration_ms) << "400 moves improve the uniform plan";
  EXPECT_NO_THROW(validate_plan(a.best.plan, topo, model)) << a.best.label;
  EXPECT_EQ(simulate(cost, a.best.plan).iteration_ms, a.best.simulation.iteration_ms);
  const LocalSearchResult b = local_search(cost, request, {start}, options, s.source);
  EXPECT_EQ(b.best.simulation.iteration_ms, a.best.simulation.iteration_ms);
  EXPECT_EQ(b.moves, a.moves);
  // From HPP's plan and random ones, on a larger cluster: never slower than HPP, always valid.
  const ShippedScenario uneven("uneven-17");
  const auto& [u, topo17, model17, cost17, request17] = uneven;
  const Candidate hpp = search_hpp(cost17, request17, u.source).front();
  options.random_starts = 2;
  const LocalSearchResult c = local_search(cost17, request17, {hpp}, options, u.source);
  EXPECT_LE(c.best.simulation.iteration_ms, hpp.simulation.iteration_ms);
  EXPECT_NO_THROW(validate_plan(c.best.plan, topo17, model17)) << c.best.label;
  EXPECT_EQ(c.starts.size(), 3u);
  for (const LocalSearchStart& st : c.starts) EXPECT_LE(st.end_ms, st.start_ms) << st.label;
}

TEST(Planner, RandomPlansAreValid) {
  const ShippedScenario scenario("uneven-17");
  const auto& [s, topo, model, cost, request] = scenario;
  std::mt19937_64 rng(5);
  int made = 0;
  for (int i = 0; i < 10; i++) {
    std::optional<Plan> plan = random_plan(cost, request, rng);
    if (!plan) continue;
    made++;
    EXPECT_NO_THROW(validate_plan(*plan, topo, model));
  }
  EXPECT_GE(made, 8);
}

TEST(Planner, BadInputIsNamed) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "eth_planner_bad";
  fs::create_directories(dir);
  const std::string bad = (dir / "bad.yaml").string();
  std::ofstream(bad) << "device_type: x\nmodel: demo\nseq_len: 64\nmethod: guessed\noptimizer_ms_per_mparam: 1\nentries: []\n";
  expect_input_error([&] { load_profile(bad); }, {bad, "method", "roofline-estimate"});
  std::ofstream(bad) << "device_type: x\nmodel: demo\nseq_len: 64\nmethod: measured\noptimizer_ms_per_mparam: 1\n"
                        "entries:\n  - {micro_batch: 2, embedding: {forward_ms: 1, backward_ms: 1, activation_bytes: 0, param_bytes: 0}}\n";
  expect_input_error([&] { load_profile(bad); }, {bad, "entries[0].layer"});
  fs::remove_all(dir);

  const ModelConfig model = small_model(2);
  DeviceType none{"mystery", 16, 0, 0, 0, 0};
  expect_input_error([&] { roofline_profile(none, model, 16, {1}, "topo.yaml", kernels::precision_path(kernels::Precision::fp32, none.rates())); }, {"topo.yaml", "mystery", "peak"});

  const Topology tiny_mem = one_node({{0.0001, 10}, {0.0001, 10}});
  const CostModel cost = roofline_cost(tiny_mem, model, 16);
  expect_input_error([&] { search_hpp(cost, {8, {1}, 1}, "scenario.yaml"); }, {"test-topology", "device_types", "GB"});
  // 5 devices of one type on one node (nothing the search would idle), 2 layers: at least 3
  // pipelines, so at least 3 samples.
  Topology many = one_node({{80, 10}, {80, 10}, {80, 10}, {80, 10}, {80, 10}});
  many.device_types.resize(1);
  for (RankPlace& r : many.ranks) r.device_type = 0;
  for (int& d : many.nodes[0].devices) d = 0;
  const CostModel cost5 = roofline_cost(many, model, 16);
  expect_input_error([&] { search_hpp(cost5, {2, {1}, 1}, "scenario.yaml"); }, {"scenario.yaml", "global_batch", "at least 3"});
  // With types to choose from, the search leaves some devices idle instead.
  const Topology mixed = one_node({{80, 10}, {80, 10}, {80, 10}, {80, 10}, {80, 10}});
  const Plan idling = search_hpp(roofline_cost(mixed, model, 16), {2, {1}, 1}, "scenario.yaml").front().plan;
  EXPECT_NO_THROW(validate_plan(idling, mixed, model));
  EXPECT_GE(idling.idle.size(), 1u);
}

}  // namespace
}  // namespace eth::test

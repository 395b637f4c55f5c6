// The exhaustive planner (lib/planner/exhaustive.hpp) against a brute force written another way
// (explicit ranks, no symmetry, memory checked by validate_plan through the predicted memory),
// its lower-bound pruning against simulating everything, and the HPP search against its optimum
// on random small clusters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <numeric>
#include <random>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/plan/plan_validation.hpp"
#include "lib/planner/exhaustive.hpp"
#include "lib/planner/search.hpp"


namespace eth::test {
namespace {

using namespace eth::planner;

// ----------------------------------------------------------------------------------------------
// Brute force over explicit ranks: every idle mask, every set partition of the other ranks
// (restricted growth strings), every permutation of a pipeline's ranks cut into stages, every
// micro-batch size up to max_b, layer split, split of each stage and batch split. Each plan that
// validate_plan accepts with its predicted memory is simulated.

struct BruteForce {
  const CostModel& cost;
  int global_batch;
  int max_b;
  long long plans = 0;
  double best_ms = -1;
  bool best_recomputes = false;  // the best plan recomputes on some stage

  // Every composition of n into k positive parts.
  static std::vector<std::vector<int>> compositions(int n, int k) {
    std::vector<std::vector<int>> out;
    if (k < 1 || n < k) return out;
    if (k == 1) return {{n}};
    for (int first = 1; first <= n - (k - 1); first++)
      for (std::vector<int> rest : compositions(n - first, k - 1)) {
        rest.insert(rest.begin(), first);
        out.push_back(rest);
      }
    return out;
  }

  // Every pipeline of these ranks taking n samples (the plan format's whole space).
  std::vector<PlanPipeline> pipelines(std::vector<int> ranks, int n) const {
    std::vector<PlanPipeline> out;
    const int L = cost.model().num_layers, R = static_cast<int>(ranks.size());
    std::sort(ranks.begin(), ranks.end());
    do {
      for (int cuts = 0; cuts < (1 << (R - 1)); cuts++) {  // bit i: a stage ends after ranks[i]
        std::vector<std::vector<int>> stages(1);
        for (int i = 0; i < R; i++) {
          stages.back().push_back(ranks[i]);
          if (i + 1 < R && (cuts >> i & 1)) stages.emplace_back();
        }
        const int S = static_cast<int>(stages.size());
        size_t widest = 0;
        for (const auto& st : stages) widest = std::max(widest, st.size());
        for (int b = 1; b <= std::min(n, max_b); b++) {
          if (n % b != 0 || b < static_cast<int>(widest)) continue;
          for (const std::vector<int>& layers : compositions(L, S)) {
            // Every split of every stage: the product of their compositions.
            std::vector<std::vector<std::vector<int>>> splits;
            for (const auto& st : stages) splits.push_back(compositions(b, static_cast<int>(st.size())));
            std::vector<size_t> pick(S, 0);
            for (bool more = true; more;) {
              PlanPipeline pipe{b, n / b, {}};
              for (int s = 0, at = 0; s < S; at += layers[s++]) {
                PlanStage stage{stages[s], {at, at + layers[s]}, {}};
                if (stages[s].size() > 1) stage.split = splits[s][pick[s]];
                pipe.stages.push_back(stage);
              }
              out.push_back(pipe);
              more = false;
              for (int s = 0; s < S && !more; s++) {
                if (++pick[s] < splits[s].size()) more = true;
                else pick[s] = 0;
              }
            }
          }
        }
      }
    } while (std::next_permutation(ranks.begin(), ranks.end()));
    return out;
  }

  // A plan counts when some recomputation per stage (every one of none, selective, full tried
  // on every stage) makes it fit; its time is the fastest of those that fit.
  void score(const Plan& plan) {
    std::vector<PlanStage*> stages;
    Plan checked = plan;
    for (PlanPipeline& pipe : checked.pipelines)
      for (PlanStage& stage : pipe.stages) stages.push_back(&stage);
    double plan_ms = -1;
    bool recomputes = false;
    for (int code = 0; code < std::pow(3, stages.size()); code++) {
      bool any = false;
      for (int s = 0, c = code; s < static_cast<int>(stages.size()); s++, c /= 3) {
        stages[s]->recompute = Recompute(c % 3);
        any = any || c % 3 != 0;
      }
      checked.predicted.memory_gb = cost.estimate(checked).memory_gb;
      try {
        validate_plan(checked, cost.topology(), cost.model());
      } catch (const InputError&) {
        continue;  // does not fit memory
      }
      const double ms = simulate(cost, checked).iteration_ms;
      if (plan_ms < 0 || ms < plan_ms) plan_ms = ms, recomputes = any;
    }
    if (plan_ms < 0) return;
    plans++;
    if (best_ms < 0 || plan_ms < best_ms) best_ms = plan_ms, best_recomputes = recomputes;
  }

  void run() {
    const int W = cost.topology().world_size();
    for (int idle = 0; idle < (1 << W) - 1; idle++) {
      std::vector<int> active, idle_ranks;
      for (int r = 0; r < W; r++) (idle >> r & 1 ? idle_ranks : active).push_back(r);
      // Restricted growth strings: block[i] <= 1 + max(block[0..i-1]).
      std::vector<int> block(active.size(), 0);
      std::function<void(size_t, int)> grow = [&](size_t i, int blocks) {
        if (i == active.size()) {
          partition(active, block, blocks, idle_ranks);
          return;
        }
        for (int k = 0; k <= blocks; k++) {
          block[i] = k;
          grow(i + 1, std::max(blocks, k + 1));
        }
      };
      grow(0, 0);
    }
  }

  void partition(const std::vector<int>& active, const std::vector<int>& block, int P, const std::vector<int>& idle) {
    std::vector<std::vector<int>> members(P);
    for (size_t i = 0; i < active.size(); i++) members[block[i]].push_back(active[i]);
    for (const std::vector<int>& samples : compositions(global_batch, P)) {
      std::vector<std::vector<PlanPipeline>> options;
      for (int k = 0; k < P; k++) options.push_back(pipelines(members[k], samples[k]));
      Plan plan;
      plan.global_batch = global_batch;
      plan.idle = idle;
      std::function<void(int)> choose = [&](int k) {
        if (k == P) {
          score(plan);
          return;
        }
        for (const PlanPipeline& pipe : options[k]) {
          plan.pipelines.push_back(pipe);
          choose(k + 1);
          plan.pipelines.pop_back();
        }
      };
      choose(0);
    }
  }
};

ModelConfig tiny_model(int layers) { return gpt2_config("tiny", 97, 128, 64, layers, 4, 64); }

// A tiny random cluster: devices of random memory (a few MB, so that memory binds) and speed,
// on one or two nodes with slow links (so that transfers and reductions matter). With
// `distinct`, every device its own type (no two ranks interchangeable).
Topology tiny_cluster(std::mt19937& rng, int devices, bool distinct) {
  Topology t;
  t.source = "tiny-cluster";
  t.network = {"ethernet", 0.05 + 0.01 * (rng() % 10), 5};
  const int types = distinct ? devices : 1 + static_cast<int>(rng() % 2);
  for (int k = 0; k < types; k++)
    t.device_types.push_back({.name = "dev" + std::to_string(k), .memory_gb = 0.0015 + 0.0008 * (rng() % 8),
                              .peak_tflops_fp32 = 1.0 + (rng() % 20), .memory_bandwidth_gbs = 50.0 + (rng() % 200)});
  const int split = devices > 1 && rng() % 2 ? 1 + static_cast<int>(rng() % (devices - 1)) : devices;  // first rank of node 1
  for (int r = 0; r < devices; r++) {
    const int node = r < split ? 0 : 1;
    if (node == static_cast<int>(t.nodes.size()))
      t.nodes.push_back({"n" + std::to_string(node), {"pcie", 0.2 + 0.1 * (rng() % 5), 2}, {}, r});
    const int type = distinct ? r : static_cast<int>(rng() % types);
    t.nodes[node].devices.push_back(type);
    t.ranks.push_back({node, r - t.nodes[node].first_rank, type});
  }
  return t;
}

CostModel roofline_cost(const Topology& topo, const ModelConfig& model, int T) {
  return CostModel(topo, model, T, profiles_for(topo, model, T, {}, {1, 2, 4}, figures_paths(topo)));
}

// The enumerator's optimum equals the brute force's on tiny clusters (recomputation chosen per
// stage, memory being tight); where no two ranks are
// interchangeable it counts exactly the same plans, and its plan validates and replays to the
// same time.
TEST(PlannerAudit, ExhaustiveEqualsBruteForce) {
  std::mt19937 rng(11);
  int compared = 0, recomputing = 0;
  for (int trial = 0; trial < 40; trial++) {
    const bool distinct = trial % 2 == 0;
    const int devices = 2 + static_cast<int>(rng() % 3), L = 2 + static_cast<int>(rng() % 3);
    const Topology topo = tiny_cluster(rng, devices, distinct);
    const ModelConfig model = tiny_model(L);
    const CostModel cost = roofline_cost(topo, model, 16);
    const PlanRequest request{2 + static_cast<int>(rng() % 4), {1, 2, 4}, 1};
    BruteForce brute{cost, request.global_batch, 4};
    brute.run();
    ExhaustiveLimits limits;
    limits.prune = false;
    const ExhaustiveResult all = exhaustive_best(cost, request, limits);
    const ExhaustiveResult pruned = exhaustive_best(cost, request);
    const std::string what = strprintf("trial %d: %d devices, %d layers, batch %d", trial, devices, L, request.global_batch);
    ASSERT_EQ(all.best.has_value(), brute.best_ms >= 0) << what;
    ASSERT_EQ(pruned.best.has_value(), brute.best_ms >= 0) << what;
    if (!all.best) continue;
    compared++;
    recomputing += brute.best_recomputes;
    EXPECT_NEAR(all.best->simulation.iteration_ms, brute.best_ms, 1e-9 * brute.best_ms) << what;
    EXPECT_NEAR(pruned.best->simulation.iteration_ms, brute.best_ms, 1e-9 * brute.best_ms) << what;
    EXPECT_EQ(all.stats.plans_simulated, static_cast<long long>(all.stats.plans)) << what;
    EXPECT_EQ(pruned.stats.plans, all.stats.plans) << what;
    EXPECT_EQ(pruned.stats.plans, pruned.stats.plans_simulated + pruned.stats.plans_pruned) << what;
    if (distinct) {
      EXPECT_EQ(static_cast<long long>(all.stats.plans), brute.plans) << what;
    } else {
      EXPECT_LE(static_cast<long long>(all.stats.plans), brute.plans) << what;
    }
    for (const ExhaustiveResult* r : {&all, &pruned}) {
      EXPECT_NO_THROW(validate_plan(r->best->plan, topo, model)) << what;
      EXPECT_EQ(simulate(cost, r->best->plan).iteration_ms, r->best->simulation.iteration_ms) << what;
    }
  }
  EXPECT_GE(compared, 30);  // most tiny clusters have a plan that fits
  EXPECT_GE(recomputing, 1);  // and on some, the fastest plan recomputes
}

// The limits cut what they say: one rank per stage, no idle ranks, a single pipeline.
TEST(PlannerAudit, LimitsCutTheSpace) {
  std::mt19937 rng(5);
  const Topology topo = tiny_cluster(rng, 3, true);
  const ModelConfig model = tiny_model(3);
  const CostModel cost = roofline_cost(topo, model, 16);
  const PlanRequest request{4, {1, 2, 4}, 1};
  const ExhaustiveResult free = exhaustive_best(cost, request);
  ASSERT_TRUE(free.best.has_value());
  ExhaustiveLimits cut;
  cut.max_stage_width = 1;
  cut.allow_idle = false;
  cut.max_pipelines = 1;
  const ExhaustiveResult narrow = exhaustive_best(cost, request, cut);
  ASSERT_TRUE(narrow.best.has_value());
  EXPECT_LT(narrow.stats.plans, free.stats.plans);
  EXPECT_GE(narrow.best->simulation.iteration_ms, free.best->simulation.iteration_ms);
  EXPECT_EQ(narrow.best->plan.pipelines.size(), 1u);
  EXPECT_TRUE(narrow.best->plan.idle.empty());
  for (const PlanStage& st : narrow.best->plan.pipelines[0].stages) EXPECT_EQ(st.ranks.size(), 1u);
  EXPECT_THROW(exhaustive_best(cost, {9, {1}, 1}), std::invalid_argument);  // batch above max_global_batch
}

// The audit: on 30 random small clusters (GPT-2 proportions, catalog GPUs, 2 to 5
// devices on up to 3 nodes, 2 to 8 layers, batch 4..8; bench_planner_audit runs up to 6 devices),
// no plan of search_hpp beats the exhaustive optimum, and both validate.
//
// The target, asserted: search_hpp within 1% of the optimum on every case (all 30 are
// at 0.00% today). Before idle options, both stage orders and the refinement (search.cpp), 7 of
// 30 were within 1% and the worst was 811% off. bench_planner_audit prints every case with the
// optimum under each cut toward search_hpp's own structure.
TEST(PlannerAudit, SearchAgainstExhaustiveOnRandomSmallClusters) {
  const std::vector<DeviceType> catalog = load_topology("inputs/topologies/gpu-catalog.yaml").device_types;
  AuditShape shape;
  shape.max_devices = 5;
  int within = 0;
  double worst = 0;
  for (uint64_t seed = 1; seed <= 30; seed++) {
    const AuditCase c = random_audit_case(seed, catalog, shape);
    CostModel cost(c.topology, c.model, c.seq_len, profiles_for(c.topology, c.model, c.seq_len, {}, {1, 2, 4, 8}, figures_paths(c.topology)));
    cost.set_allow_sharding(false);  // the enumeration's space: every plan keeps whole moments
    const ExhaustiveResult ex = exhaustive_best(cost, c.request);
    std::optional<Candidate> hpp;
    try {
      hpp = search_hpp(cost, c.request, c.name).front();
    } catch (const InputError&) {
    }
    if (!ex.best) {
      EXPECT_FALSE(hpp.has_value()) << c.name << ": the planner found a plan the enumeration does not have";
      continue;
    }
    ASSERT_TRUE(hpp.has_value()) << c.name << ": no planner plan, but the optimum " << plan_outline(ex.best->plan, c.topology);
    EXPECT_NO_THROW(validate_plan(ex.best->plan, c.topology, c.model)) << c.name;
    EXPECT_NO_THROW(validate_plan(hpp->plan, c.topology, c.model)) << c.name;
    const double opt = ex.best->simulation.iteration_ms, got = hpp->simulation.iteration_ms;
    EXPECT_LE(opt, got * (1 + 1e-12)) << c.name << ": planner " << plan_outline(hpp->plan, c.topology)
                                      << " beats the optimum " << plan_outline(ex.best->plan, c.topology);
    const double gap = 100 * (got / opt - 1);
    within += gap <= 1;
    worst = std::max(worst, gap);
    if (gap > 1)
      std::cout << strprintf("  %-44s planner %+7.2f%%: %s\n  %-44s optimum: %s\n", c.name.c_str(), gap,
                             plan_outline(hpp->plan, c.topology).c_str(), "", plan_outline(ex.best->plan, c.topology).c_str());
  }
  std::cout << strprintf("  %d of 30 cases within 1%% of the optimum; worst %.2f%%\n", within, worst);
  EXPECT_EQ(within, 30);
}

}  // namespace
}  // namespace eth::test

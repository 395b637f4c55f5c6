// The simulator's timeline (SimSpan, what plan drawings show): recording it changes no simulated
// number, and it holds what a step does: every stage's forward and backward of each micro-batch,
// one after another, each collective among its owners, and AdamW on every training rank, all
// inside the simulated iteration.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "lib/plan/plan_validation.hpp"
#include "lib/planner/simulator.hpp"


namespace eth::test {
namespace {

using namespace eth::planner;

class SimulatorTimeline : public ::testing::TestWithParam<const char*> {};

TEST_P(SimulatorTimeline, RecordsTheStepWithoutChangingIt) {
  const Topology topo = load_topology("tests/mpi/plans/cpu-2nodes-4.yaml");
  const ModelConfig model = load_model_config("inputs/models/tiny-4l.yaml");
  const CostModel cost(topo, model, 16, profiles_for(topo, model, 16, {}, {1, 2, 3, 4}, figures_paths(topo)));
  const Plan plan = load_plan(std::string("tests/mpi/plans/") + GetParam());
  validate_plan(plan, topo, model);

  std::vector<SimSpan> timeline;
  const Simulation plain = simulate(cost, plan), recorded = simulate(cost, plan, &timeline);
  EXPECT_EQ(plain.iteration_ms, recorded.iteration_ms);
  EXPECT_EQ(plain.pipeline_ms, recorded.pipeline_ms);
  EXPECT_EQ(plain.busy_ms, recorded.busy_ms);
  EXPECT_EQ(plain.comm_ms, recorded.comm_ms);

  std::map<std::pair<int, SimSpan::Kind>, std::vector<const SimSpan*>> by_rank;
  for (const SimSpan& s : timeline) {
    EXPECT_GE(s.start_ms, 0.0);
    EXPECT_LE(s.start_ms, s.end_ms);
    EXPECT_LE(s.end_ms, recorded.iteration_ms + 1e-9) << "a span after the step ends";
    for (int r : s.ranks) by_rank[{r, s.kind}].push_back(&s);
  }
  auto spans = [&](int r, SimSpan::Kind kind) { return by_rank[std::make_pair(r, kind)]; };
  const std::vector<RankRole> roles = rank_roles(plan, topo.world_size());
  for (int r = 0; r < topo.world_size(); r++) {
    const size_t m = roles[r].idle() ? 0 : plan.pipelines[roles[r].pipeline].micro_batches;
    EXPECT_EQ(spans(r, SimSpan::Kind::forward).size(), m) << "rank " << r;
    EXPECT_EQ(spans(r, SimSpan::Kind::backward).size(), m) << "rank " << r;
    EXPECT_EQ(spans(r, SimSpan::Kind::optimizer).size(), roles[r].idle() ? 0u : 1u) << "rank " << r;
    // A rank's compute runs one span at a time.
    std::vector<const SimSpan*> compute = spans(r, SimSpan::Kind::forward);
    for (const SimSpan* s : spans(r, SimSpan::Kind::backward)) compute.push_back(s);
    std::sort(compute.begin(), compute.end(), [](auto* a, auto* b) { return a->start_ms < b->start_ms; });
    for (size_t i = 1; i < compute.size(); i++) EXPECT_LE(compute[i - 1]->end_ms, compute[i]->start_ms + 1e-9) << "rank " << r;
  }
  size_t collectives = 0;
  for (const Reduction& red : plan_reductions(cost, plan)) collectives += (red.ms > 0) + (red.gather_ms > 0);
  EXPECT_EQ(collectives, static_cast<size_t>(std::count_if(timeline.begin(), timeline.end(), [](const SimSpan& s) {
              return s.kind == SimSpan::Kind::reduction || s.kind == SimSpan::Kind::gather;
            })));
}

INSTANTIATE_TEST_SUITE_P(Plans, SimulatorTimeline,
                         ::testing::Values("two-depths-4.yaml", "split-stage-4.yaml", "idle-rank-4.yaml",
                                           "partly-sharded-4.yaml", "recompute-4.yaml"));

}  // namespace
}  // namespace eth::test

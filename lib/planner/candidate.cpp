#include "lib/planner/candidate.hpp"

namespace eth::planner {

Candidate evaluate_plan(const CostModel& cost, Plan plan, const std::string& label) {
  Candidate c;
  c.label = label;
  c.estimate = cost.estimate(plan);
  c.simulation = simulate(cost, plan);
  plan.predicted = {c.simulation.iteration_ms, c.simulation.pipeline_ms, c.estimate.memory_gb};
  c.plan = std::move(plan);
  return c;
}

}  // namespace eth::planner

// What every part of the planner hands to the others: a request, and a plan with its analytic
// estimate and simulation. The searches (search.hpp, local_search.hpp, exhaustive.hpp) and the
// sharding choice (sharding_choice.hpp) share these types without including each other.
#pragma once

#include <string>
#include <vector>

#include "lib/plan/plan.hpp"
#include "lib/planner/cost_model.hpp"
#include "lib/planner/micro_batches.hpp"
#include "lib/planner/simulator.hpp"

namespace eth::planner {

struct PlanRequest {
  int global_batch = 0;
  std::vector<int> micro_batches = kDefaultMicroBatches;  // micro-batch sizes to try
  int top = 1;                                     // plans to return, best first
  int max_stage_width = 0;                         // ranks per stage at most; 0: no limit
};

struct Candidate {
  std::string label;       // how it was built, e.g. "hpp b0=4 {A100-80GB}x2 {T4-16GB}x1 width 3"
  Plan plan;
  Estimate estimate;       // analytic model
  Simulation simulation;   // event replay
};

// Simulates a plan and attaches the analytic estimate.
Candidate evaluate_plan(const CostModel& cost, Plan plan, const std::string& label);

}  // namespace eth::planner

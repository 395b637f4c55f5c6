#include "lib/planner/sharding_choice.hpp"

#include "lib/base/strprintf.hpp"
#include "lib/plan/grad_blocks.hpp"
#include "lib/planner/stage_cost.hpp"

namespace eth::planner {

Candidate choose_sharding(const CostModel& cost, Candidate candidate) {
  if (!cost.allow_sharding() || cost.shard_optimizer()) return candidate;
  const std::vector<GradBlock> blocks = derive_grad_blocks(candidate.plan, cost.model().num_layers);
  Plan best = candidate.plan;
  double best_ms = candidate.simulation.iteration_ms;
  for (size_t b = 0; b < blocks.size(); b++) {
    if (blocks[b].owners.size() < 2) continue;
    Plan trial = best;
    trial.sharded_blocks.push_back(static_cast<int>(b));  // ascending: blocks are visited in order
    if (!choose_recompute(cost, trial)) continue;         // cannot happen: sharding only frees memory
    const double ms = simulate(cost, trial).iteration_ms;
    if (ms < best_ms) best = std::move(trial), best_ms = ms;
  }
  if (best.sharded_blocks.empty()) return candidate;
  const std::string label = strprintf("%s, %zu of %zu blocks sharded", candidate.label.c_str(), best.sharded_blocks.size(),
                                      blocks.size());
  best.source = "eth_plan (" + label + ")";
  return evaluate_plan(cost, std::move(best), label);
}

}  // namespace eth::planner

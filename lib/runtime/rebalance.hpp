// Online re-balancing (docs/design.md, "Online re-balancing"): the split of the global batch
// follows the measured speed of the ranks. Any split computes the same update (the meaning of a
// step, lib/runtime/pipeline_runtime.hpp), so a running job may move samples between pipelines and
// between the ranks of a split stage without moving a weight.
//
// Rank 0 keeps a smoothed compute time per sample for every rank (forward + backward of its
// share, measured each step). Every `every` steps it re-balances the plan's split with the
// planner's balancing (lib/plan/batch_balance.hpp): each split stage by speed, then the pipelines'
// sample counts by water-filling under the linear 1F1B model, a pipeline's samples left over
// forming a smaller last micro-batch. Hysteresis, so that measurement noise alone does not flip
// the split back and forth: a new split is taken only when the model predicts a step at least
// `threshold` faster than the current split under the same rates, and only when two
// consecutive decisions find the current split that much slower than the best (a spike seen
// once does not move it; a lasting change is followed `every` steps later), the second
// decision's split then taken. Layers, stages and micro-batch sizes never change.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/plan/plan.hpp"

namespace eth {

struct RebalanceOptions {
  int every = 0;            // steps between decisions; 0: never re-balance
  double threshold = 0.05;  // the least predicted gain (fraction of the step) worth a change
};

// The predicted step of `plan` when rank r computes a sample in ms_per_sample[r] (idle ranks:
// any value), under the linear 1F1B model: its slowest pipeline's compute, without the
// reduction and optimizer that every split shares; a smaller last micro-batch is charged as a
// whole one.
double predicted_step_ms(const Plan& plan, const std::vector<double>& ms_per_sample);

// `plan` with its split re-balanced for those rates; std::nullopt when no split of the batch
// gives each pipeline at least one micro-batch (the plan then stays as it is).
std::optional<Plan> rebalanced_plan(const Plan& plan, const std::vector<double>& ms_per_sample);

// Whether two plans differ at most in their batch split: the same global batch, pipelines,
// micro-batch sizes, stages (ranks, layers) and idle ranks.
bool same_stages(const Plan& a, const Plan& b);

// `plan` with the batch split of `split` (same_stages(plan, split)): its micro-batch counts,
// per-stage splits and prediction; the rest (recomputation, sharded blocks) stays `plan`'s.
Plan with_batch_split(Plan plan, const Plan& split);

// Samples rank r computes in one step of `plan` (0 for an idle rank).
std::vector<int> samples_per_step(const Plan& plan, int world_size);

// A plan's batch split, for metrics and the trace: per pipeline its samples, micro-batches and
// the split of each stage of several ranks; and in one line: "8 (3:1), 4".
nlohmann::json split_json(const Plan& plan);
std::string split_text(const Plan& plan);

struct RebalanceDecision {
  Plan plan;                 // the new split
  double current_ms = 0;     // predicted step of the current split, at the measured rates
  double predicted_ms = 0;   // ... of the new one
  double gain() const { return 1.0 - predicted_ms / current_ms; }
};

// Rank 0's state: the smoothed rates, and when to decide.
class Rebalancer {
 public:
  Rebalancer(const RebalanceOptions& options, int world_size);

  // After a step under `plan`: every rank's compute ms of that step on its device.
  void observe(const Plan& plan, const std::vector<double>& compute_ms);
  // After step `step` (0-based): a new split when one is due, worth it and confirmed.
  std::optional<RebalanceDecision> decide(const Plan& plan, int step);
  const std::vector<double>& ms_per_sample() const { return rate_; }

 private:
  RebalanceOptions options_;
  std::vector<double> rate_;  // per rank, smoothed; 0 until measured
  bool behind_ = false;       // the last decision found the current split worth changing
};

}  // namespace eth

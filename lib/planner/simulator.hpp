// The event simulator: replays every stage's 1F1B action list (lib/plan/schedule.hpp, the list the
// runtime executes) with the cost model's durations. Compute is sequential per stage (a stage
// of several ranks waits for its slowest rank); sends are asynchronous, one transfer at a time
// per direction of each stage boundary; a receive waits for its transfer. `reduce_grads` is
// replayed as the plan's block reductions: a block's collective becomes ready when its last
// owner has finished the block's part of its last backward (a stage's last backward runs its
// units from the last to the first), and each collective holds the communication channel of
// every owner, so reductions overlap remaining backward work but not one another on a rank.
// Then AdamW on every rank. docs/planner.md describes the model.
#pragma once

#include <vector>

#include "lib/planner/cost_model.hpp"

namespace eth::planner {

struct Simulation {
  double iteration_ms = 0;
  std::vector<double> pipeline_ms;     // end of each pipeline's last backward
  std::vector<double> busy_ms;         // per rank: its own compute and optimizer
  std::vector<double> comm_ms;         // per rank: reductions it takes part in
  std::vector<double> idle_ms;         // per rank: iteration - busy
};

// One interval of the replayed step, for drawings (plan_drawing.hpp): a stage's forward or
// backward of a micro-batch, a collective, or a rank's AdamW. Receives and sends are the gaps.
struct SimSpan {
  enum class Kind { forward, backward, reduction, gather, optimizer };
  Kind kind = Kind::forward;
  int index = 0;            // forward/backward: micro-batch; reduction/gather: Reduction's position
  std::vector<int> ranks;   // the stage's ranks, the collective's owners, or the one rank
  double start_ms = 0, end_ms = 0;
};

// `timeline`, when given, receives every span; recording it changes no simulated time.
Simulation simulate(const CostModel& cost, const Plan& plan, std::vector<SimSpan>* timeline = nullptr);

}  // namespace eth::planner

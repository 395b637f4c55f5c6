// A randomised local search over whole plans: the check that the HPP search does not miss much
// on clusters too large for the exhaustive planner (docs/planner.md, "Local search"). It starts
// from given plans (HPP's, the baselines') and a few random ones, and from each runs simulated
// annealing over moves that change one thing of a plan:
//   - a device moves to another stage (of any pipeline), to a new stage or to a new pipeline of
//     its own; two devices of different types swap places;
//   - a stage of several devices is split in two, or two neighbouring stages merge (a stage
//     width changes);
//   - a layer cut moves; a pipeline's layers are re-partitioned by the DP (partition.hpp);
//   - one sample of a stage's split moves from one device to another;
//   - samples move between pipelines (the batch share); a pipeline's micro-batch size changes;
//   - a pipeline splits in two, or two pipelines of equal depth merge stage by stage;
//   - a device is idled, or an idle one brought back.
// Moves stay inside the request: micro-batches of at most its largest size, stages of at most
// request.max_stage_width ranks. Every candidate is checked by validate_plan (memory included,
// from the cost model's prediction) and scored by the simulator; the best plan seen is returned, so the result is
// never worse than the best start. Deterministic for a seed and an iteration budget; a time
// budget, when set, stops it earlier (and then depends on the machine's speed).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lib/planner/candidate.hpp"

namespace eth::planner {

struct LocalSearchOptions {
  std::uint64_t seed = 1;
  int iterations = 2000;        // moves tried in all, shared equally among the starts
  double time_limit_ms = 0;     // 0: none; else the search stops after this much wall time
  int random_starts = 2;        // random plans added to the given starts
  double temperature = 0.02;    // at the start, a move that makes the plan this fraction slower is
                                // accepted with probability 1/e; falls linearly to 0
};

struct LocalSearchStart {
  std::string label;
  double start_ms = 0;          // simulated
  double end_ms = 0;            // best reached from it
};

struct LocalSearchResult {
  Candidate best;               // label: "local search from <start>"
  std::vector<LocalSearchStart> starts;
  int moves = 0;                // moves tried
  int evaluated = 0;            // of these, candidates that passed validate_plan and were simulated
  int improvements = 0;         // new best plans found
  double wall_ms = 0;
};

// Runs the search from `starts` (each a valid plan) and options.random_starts random plans.
// Throws InputError naming `where` when there is no start at all.
LocalSearchResult local_search(const CostModel& cost, const PlanRequest& request, const std::vector<Candidate>& starts,
                               const LocalSearchOptions& options, const std::string& where);

// A random plan that passes validate_plan: a random number of pipelines, each type's devices
// dealt among them, stages of random widths, layers by the DP, samples by speed, a random
// micro-batch. Nothing if none was found in `tries` attempts.
std::optional<Plan> random_plan(const CostModel& cost, const PlanRequest& request, std::mt19937_64& rng, int tries = 50);

}  // namespace eth::planner

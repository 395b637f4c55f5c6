// The hierarchical HPP search and its two baselines (docs/planner.md):
//   inter-pipeline: which devices form which pipelines (device types grouped into mixing
//     groups; each group's devices dealt evenly into P pipelines), and how many samples each
//     pipeline takes so that all finish together (water-filling at sample granularity);
//   intra-pipeline: layer boundaries by dynamic programming (partition.hpp), memoised on the
//     pipeline's stage sequence, so identical pipelines are solved once;
//   intra-stage: each run of one device type in a pipeline is grouped into stages of up to w
//     ranks (w = 1, 2, 4, ... and the whole run, each tried), and a stage of several ranks
//     splits every micro-batch among them by speed (stage_cost.hpp).
// All of it is repeated with some devices left idle (each type; all but the fastest type; each
// node on small clusters) and for two stage orders (largest memory first, slowest type first).
// Candidates are ranked by the analytic model; the best few are replayed by the simulator; the
// best three are refined by a short local search (local_search.hpp) inside the request, and the
// fastest simulated plan wins. The output is a pure function of the inputs.
#pragma once

#include <string>
#include <vector>

#include "lib/base/input_error.hpp"
#include "lib/planner/candidate.hpp"
#include "lib/planner/cost_model.hpp"

namespace eth::planner {

// HPP plans, best simulated first (at most request.top). Throws InputError naming `where` when
// no plan fits memory or the batch is too small for any plan.
std::vector<Candidate> search_hpp(const CostModel& cost, const PlanRequest& request, const std::string& where);

// Megatron style: identical pipelines of consecutive ranks, equal layers per stage, equal
// samples per pipeline; the depth that fits memory and simulates fastest.
Candidate baseline_uniform(const CostModel& cost, const PlanRequest& request, const std::string& where);
// AMP style: one pipeline shape replicated (each type's devices dealt evenly), layers
// balanced by speed, equal samples per pipeline.
Candidate baseline_layer_balanced(const CostModel& cost, const PlanRequest& request, const std::string& where);

// Metis style (Um et al., USENIX ATC '24), without tensor parallelism (lib/planner/baseline_metis.cpp,
// docs/planner.md "Baselines"): P identical pipelines (P dividing every type's count); each
// pipeline's devices laid out in one order of the device types and cut into stages of Metis's
// device-group shapes (powers of two, its size variance and permutation limits), so a stage may
// mix types; its samples split by speed; layers by the memory-aware DP; every micro-batch count.
// The best by the analytic model are simulated; the fastest simulated wins. Throws InputError
// naming `where` when no shape fits.
Candidate baseline_metis(const CostModel& cost, const PlanRequest& request, const std::string& where);
// The same search's best few (by the analytic model, each under below_ms), simulated, fastest
// first; stages of at most request.max_stage_width ranks; replica counts from the most down, the
// next searched while the stage orders of group sizes visited so far, in every type order, number
// at most max_shapes (0: every replica count). HPP's search takes them as candidates (stages
// mixing device types), with below_ms from its own best.
std::vector<Candidate> device_group_plans(const CostModel& cost, const PlanRequest& request, double below_ms,
                                          long max_shapes);

// `plan(cost)` with recomputation forbidden, and, where that finds no plan (InputError) and the
// cost model allows recomputation, `plan(cost)` again (docs/planner.md, "Memory savers"): every
// search and baseline recomputes only where nothing fits without it.
template <typename Planner>
auto recompute_only_where_needed(const CostModel& cost, Planner plan) -> decltype(plan(cost)) {
  if (!cost.allow_recompute()) return plan(cost);
  CostModel keep_all = cost;
  keep_all.set_allow_recompute(false);
  try {
    return plan(keep_all);
  } catch (const InputError&) {
    return plan(cost);  // its own error, if nothing fits even so
  }
}

}  // namespace eth::planner

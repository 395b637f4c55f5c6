// One stage of a pipeline under the cost model (docs/planner.md, "Intra-stage"). The ranks of a
// stage hold the same layers and split every micro-batch among them by speed; the stage takes
// as long as its slowest rank plus the transfers at its boundaries, and fits when every rank's
// parameters, gradients, AdamW moments and in-flight activations fit its device, under the
// least activation recomputation that makes them fit (whose extra forward the stage then pays).
#pragma once

#include <optional>
#include <vector>

#include "lib/plan/batch_balance.hpp"  // split_by_speed
#include "lib/planner/cost_model.hpp"

namespace eth::planner {

// A pipeline's devices before layers are assigned: the ranks of each stage, in stage order.
using StageRanks = std::vector<std::vector<int>>;

// The samples each of `ranks` takes of a micro-batch of b, by the speed of one transformer
// layer on its device type at micro-batch b. Empty when b < ranks.size(); {b} for one rank.
std::vector<int> stage_split(const CostModel& cost, const std::vector<int>& ranks, int b);

// Stage s of `stages` at micro-batch b, priced once so that a search can try many layer ranges.
class StageCost {
 public:
  StageCost(const CostModel& cost, const StageRanks& stages, int s, int b);

  bool feasible() const { return !split_.empty(); }  // every rank gets at least one sample
  const std::vector<int>& split() const { return split_; }
  // Per micro-batch: the slowest rank's forward + backward of `layers` (its recomputation
  // included), plus one transfer across each of its boundaries.
  double ms(LayerRange layers) const;
  // Every rank fits its device with the activations of S - s micro-batches in flight: 1F1B
  // keeps min(S - s, m), but m is not known until samples are balanced, so this is the bound.
  bool fits(LayerRange layers) const { return recompute(layers).has_value(); }
  // The least recomputation under which every rank fits (CostModel::lightest_recompute).
  std::optional<Recompute> recompute(LayerRange layers) const;

 private:
  // The stage's ranks, one per distinct (device type, samples): the others cost the same.
  struct Member {
    int type;
    int samples;
    ProfileEntry costs;  // at `samples`
  };
  const CostModel& cost_;
  std::vector<int> split_;
  std::vector<Member> members_;
  double link_ms_ = 0;
  int slots_ = 1;  // S - s
  // Memory depends on the recomputation, a range's layer count and whether the range holds the
  // embedding (first) or the head (last): the most layers that fit, indexed [mode][first][last]
  // (modes none, selective, full; zero where the cost model allows no recomputation).
  int max_layers_[3][2][2] = {};
};

// The plan's stage: ranks, layers and (for several ranks) their split of a micro-batch of b;
// no recomputation (choose_recompute sets it once the pipeline is whole).
PlanStage plan_stage(const CostModel& cost, const std::vector<int>& ranks, LayerRange layers, int b);

// Sets each stage of `pipe` to the least recomputation under which its ranks fit with its
// in-flight micro-batches (activation_slots); false when some stage fits under none.
bool choose_recompute(const CostModel& cost, PlanPipeline& pipe);
// The same for every pipeline of `plan`, each rank keeping only its shards' moments in the
// plan's sharded blocks (and every block under CostModel::set_shard_optimizer).
bool choose_recompute(const CostModel& cost, Plan& plan);

}  // namespace eth::planner

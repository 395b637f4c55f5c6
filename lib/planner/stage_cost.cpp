#include "lib/planner/stage_cost.hpp"

#include <algorithm>
#include <numeric>

#include "lib/plan/optimizer_shards.hpp"
#include "lib/plan/schedule.hpp"  // activation_slots

namespace eth::planner {

std::vector<int> stage_split(const CostModel& cost, const std::vector<int>& ranks, int b) {
  if (b < static_cast<int>(ranks.size())) return {};
  if (ranks.size() == 1) return {b};
  std::vector<double> speeds;
  for (int r : ranks) {
    const ProfileEntry e = cost.profile(cost.topology().ranks[r].device_type).at(b);
    speeds.push_back(b / (e.layer.forward_ms + e.layer.backward_ms));
  }
  return split_by_speed(b, speeds);
}

namespace {

// The least recomputation under which every rank of `stage` fits; nothing if none does.
// `sharded_bytes(rank)`: the optimizer state the rank does not keep.
template <typename ShardedBytes>
std::optional<Recompute> stage_recompute(const CostModel& cost, const PlanStage& stage, int b, int slots,
                                         ShardedBytes sharded_bytes) {
  Recompute heaviest = Recompute::none;
  for (size_t i = 0; i < stage.ranks.size(); i++) {
    const int samples = stage.split.empty() ? b : stage.split[i];
    const std::optional<Recompute> mode = cost.lightest_recompute(
        cost.topology().ranks[stage.ranks[i]].device_type, stage.layers, samples, slots, sharded_bytes(stage.ranks[i]));
    if (!mode) return std::nullopt;
    heaviest = std::max(heaviest, *mode);
  }
  return heaviest;
}

template <typename ShardedBytes>
bool choose_pipeline_recompute(const CostModel& cost, PlanPipeline& pipe, ShardedBytes sharded_bytes) {
  const int S = static_cast<int>(pipe.stages.size());
  for (int s = 0; s < S; s++) {
    PlanStage& stage = pipe.stages[s];
    const std::optional<Recompute> mode =
        stage_recompute(cost, stage, pipe.micro_batch, activation_slots(s, S, pipe.micro_batches), sharded_bytes);
    if (!mode) return false;
    stage.recompute = *mode;
  }
  return true;
}

}  // namespace

PlanStage plan_stage(const CostModel& cost, const std::vector<int>& ranks, LayerRange layers, int b) {
  PlanStage stage{ranks, layers, {}};
  if (ranks.size() > 1) stage.split = stage_split(cost, ranks, b);
  return stage;
}

bool choose_recompute(const CostModel& cost, PlanPipeline& pipe) {
  return choose_pipeline_recompute(cost, pipe, [](int) { return 0.0; });
}

bool choose_recompute(const CostModel& cost, Plan& plan) {
  const bool sharded = cost.shard_optimizer() || !plan.sharded_blocks.empty();
  const std::vector<RankRole> roles = rank_roles(plan, cost.topology().world_size());
  auto sharded_bytes = [&](int rank) {  // the two moments of the floats other owners update
    if (!sharded) return 0.0;
    const LayerRange layers = plan.pipelines[roles[rank].pipeline].stages[roles[rank].stage].layers;
    return 8 * (cost.param_floats(layers) - double(moment_floats(cost.model(), plan, rank, cost.shard_optimizer())));
  };
  for (PlanPipeline& pipe : plan.pipelines)
    if (!choose_pipeline_recompute(cost, pipe, sharded_bytes)) return false;
  return true;
}

StageCost::StageCost(const CostModel& cost, const StageRanks& stages, int s, int b)
    : cost_(cost), split_(stage_split(cost, stages[s], b)) {
  if (split_.empty()) return;
  const int S = static_cast<int>(stages.size()), L = cost.model().num_layers;
  slots_ = S - s;
  for (size_t i = 0; i < stages[s].size(); i++) {
    const int type = cost.topology().ranks[stages[s][i]].device_type;
    const bool seen = std::any_of(members_.begin(), members_.end(),
                                  [&](const Member& m) { return m.type == type && m.samples == split_[i]; });
    if (!seen) members_.push_back({type, split_[i], cost.profile(type).at(split_[i])});
  }
  // Memory grows with the layer count, so the largest count that fits bounds every range.
  const int modes = cost.allow_recompute() ? 3 : 1;
  for (int mode = 0; mode < modes; mode++)
    for (int first = 0; first < 2; first++)
      for (int last = 0; last < 2; last++) {
        // Ranges of `count` layers with these flags: [0, count), [L - count, L) or [1, 1 + count).
        auto range = [&](int count) { return first ? LayerRange{0, count} : last ? LayerRange{L - count, L} : LayerRange{1, 1 + count}; };
        auto all_fit = [&](int count) {
          return std::all_of(members_.begin(), members_.end(), [&](const Member& m) {
            return cost.memory_bytes(range(count), m.samples, slots_, Recompute(mode)) <= cost.device_bytes(m.type);
          });
        };
        const int longest = first && last ? L : first || last ? L - 1 : L - 2;
        int& n = max_layers_[mode][first][last];
        if (first && last) n = all_fit(L) ? L : 0;
        else while (n < longest && all_fit(n + 1)) n++;
      }
  // Transfers depend on the neighbours' splits only, not on the layers.
  auto skeleton = [&](int k) { return plan_stage(cost, stages[k], {0, 1}, b); };
  const PlanStage here = skeleton(s);
  if (s > 0) link_ms_ += cost.boundary_ms(skeleton(s - 1), here, b);
  if (s + 1 < S) link_ms_ += cost.boundary_ms(here, skeleton(s + 1), b);
}

double StageCost::ms(LayerRange layers) const {
  const Recompute mode = recompute(layers).value_or(Recompute::none);
  double worst = 0;
  for (const Member& m : members_)
    worst = std::max(worst, cost_.compute(m.costs, layers).total() + cost_.recompute_ms(m.costs, layers, mode, slots_));
  return worst + link_ms_;
}

std::optional<Recompute> StageCost::recompute(LayerRange layers) const {
  const bool first = layers.begin == 0, last = layers.end == cost_.model().num_layers;
  for (int mode = 0; mode < 3; mode++)
    if (layers.count() <= max_layers_[mode][first][last]) return Recompute(mode);
  return std::nullopt;
}

}  // namespace eth::planner

#include "lib/planner/stage_cost.hpp"

#include <algorithm>
#include <numeric>

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

PlanStage plan_stage(const CostModel& cost, const std::vector<int>& ranks, LayerRange layers, int b) {
  PlanStage stage{ranks, layers, {}};
  if (ranks.size() > 1) stage.split = stage_split(cost, ranks, b);
  return stage;
}

StageCost::StageCost(const CostModel& cost, const StageRanks& stages, int s, int b)
    : cost_(cost), split_(stage_split(cost, stages[s], b)) {
  if (split_.empty()) return;
  const int S = static_cast<int>(stages.size()), L = cost.model().num_layers;
  for (size_t i = 0; i < stages[s].size(); i++) {
    const int type = cost.topology().ranks[stages[s][i]].device_type;
    const bool seen = std::any_of(members_.begin(), members_.end(),
                                  [&](const Member& m) { return m.type == type && m.samples == split_[i]; });
    if (!seen) members_.push_back({type, split_[i], cost.profile(type).at(split_[i])});
  }
  // Memory grows with the layer count, so the largest count that fits bounds every range.
  for (int first = 0; first < 2; first++)
    for (int last = 0; last < 2; last++) {
      // Ranges of `count` layers with these flags: [0, count), [L - count, L) or [1, 1 + count).
      auto range = [&](int count) { return first ? LayerRange{0, count} : last ? LayerRange{L - count, L} : LayerRange{1, 1 + count}; };
      auto all_fit = [&](int count) {
        return std::all_of(members_.begin(), members_.end(), [&](const Member& m) {
          return cost.memory_bytes(range(count), m.samples, S - s) <= cost.device_bytes(m.type);
        });
      };
      const int longest = first && last ? L : first || last ? L - 1 : L - 2;
      int& n = max_layers_[first][last];
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
  double worst = 0;
  for (const Member& m : members_) worst = std::max(worst, cost_.compute(m.costs, layers).total());
  return worst + link_ms_;
}

bool StageCost::fits(LayerRange layers) const {
  return layers.count() <= max_layers_[layers.begin == 0][layers.end == cost_.model().num_layers];
}

}  // namespace eth::planner

#include "lib/planner/partition.hpp"

#include <algorithm>
#include <limits>

namespace eth::planner {
namespace {

std::vector<StageCost> price_stages(const CostModel& cost, const StageRanks& stages, int b) {
  std::vector<StageCost> out;
  for (size_t s = 0; s < stages.size(); s++) out.emplace_back(cost, stages, static_cast<int>(s), b);
  return out;
}

Partition finish(const std::vector<StageCost>& priced, std::vector<LayerRange> layers) {
  Partition p{std::move(layers), 0, 0};
  for (size_t s = 0; s < p.layers.size(); s++) {
    const double ms = priced[s].ms(p.layers[s]);
    p.max_stage_ms = std::max(p.max_stage_ms, ms);
    p.sum_stage_ms += ms;
  }
  return p;
}

}  // namespace

std::optional<Partition> partition_layers(const CostModel& cost, const StageRanks& stages, int b) {
  const int S = static_cast<int>(stages.size());
  const int L = cost.model().num_layers;
  if (S < 1 || S > L) return std::nullopt;
  const std::vector<StageCost> priced = price_stages(cost, stages, b);
  if (!std::all_of(priced.begin(), priced.end(), [](const StageCost& c) { return c.feasible(); })) return std::nullopt;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[s][j]: the slowest stage when stages 0..s-1 cover layers [0, j); from[s][j] its cut.
  std::vector<std::vector<double>> best(S + 1, std::vector<double>(L + 1, kInf));
  std::vector<std::vector<int>> from(S + 1, std::vector<int>(L + 1, -1));
  best[0][0] = 0;
  for (int s = 0; s < S; s++) {
    // Stage s needs at least one layer and must leave one for each later stage.
    for (int j = s + 1; j <= L - (S - s - 1); j++) {
      if (s == S - 1 && j != L) continue;
      for (int i = j - 1; i >= s; i--) {
        if (best[s][i] == kInf) continue;
        const LayerRange r{i, j};
        // Memory grows with the layer count: once a range does not fit, longer ones do not either.
        if (!priced[s].fits(r)) break;
        const double v = std::max(best[s][i], priced[s].ms(r));
        if (v < best[s + 1][j]) {
          best[s + 1][j] = v;
          from[s + 1][j] = i;
        }
      }
    }
  }
  if (best[S][L] == kInf) return std::nullopt;
  std::vector<LayerRange> layers(S);
  for (int s = S, j = L; s > 0; s--) {
    layers[s - 1] = {from[s][j], j};
    j = from[s][j];
  }
  return finish(priced, std::move(layers));
}

Partition uniform_partition(const CostModel& cost, const StageRanks& stages, int b) {
  const int S = static_cast<int>(stages.size());
  const int L = cost.model().num_layers;
  std::vector<LayerRange> layers;
  for (int s = 0, at = 0; s < S; s++) {
    const int n = L / S + (s < L % S ? 1 : 0);
    layers.push_back({at, at + n});
    at += n;
  }
  return finish(price_stages(cost, stages, b), std::move(layers));
}

}  // namespace eth::planner

#include "lib/planner/partition.hpp"

#include <algorithm>
#include <limits>

namespace eth::planner {
namespace {

double link_ms(const CostModel& cost, const std::vector<int>& ranks, int s, int b) {
  const double bytes = 4.0 * b * cost.seq_len() * cost.model().channels;
  double ms = 0;
  if (s > 0) ms += cost.p2p_ms(ranks[s - 1], ranks[s], bytes);
  if (s + 1 < static_cast<int>(ranks.size())) ms += cost.p2p_ms(ranks[s], ranks[s + 1], bytes);
  return ms;
}

Partition finish(const CostModel& cost, const std::vector<int>& ranks, std::vector<LayerRange> layers, int b) {
  Partition p{std::move(layers), 0, 0};
  for (size_t s = 0; s < p.layers.size(); s++) {
    const double ms = stage_ms(cost, ranks, static_cast<int>(s), p.layers[s], b);
    p.max_stage_ms = std::max(p.max_stage_ms, ms);
    p.sum_stage_ms += ms;
  }
  return p;
}

}  // namespace

double stage_ms(const CostModel& cost, const std::vector<int>& ranks, int s, LayerRange layers, int b) {
  return cost.compute(cost.topology().ranks[ranks[s]].device_type, layers, b).total() + link_ms(cost, ranks, s, b);
}

bool stage_fits(const CostModel& cost, const std::vector<int>& ranks, int s, LayerRange layers, int b) {
  const int S = static_cast<int>(ranks.size());
  return cost.memory_bytes(layers, b, S - s) <= cost.device_bytes(cost.topology().ranks[ranks[s]].device_type);
}

std::optional<Partition> partition_layers(const CostModel& cost, const std::vector<int>& ranks, int b) {
  const int S = static_cast<int>(ranks.size());
  const int L = cost.model().num_layers;
  if (S < 1 || S > L) return std::nullopt;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[s][j]: the slowest stage when stages 0..s-1 cover layers [0, j); from[s][j] its cut.
  std::vector<std::vector<double>> best(S + 1, std::vector<double>(L + 1, kInf));
  std::vector<std::vector<int>> from(S + 1, std::vector<int>(L + 1, -1));
  best[0][0] = 0;
  for (int s = 0; s < S; s++) {
    const int type = cost.topology().ranks[ranks[s]].device_type;
    const ProfileEntry e = cost.profile(type).at(b);
    const double layer = e.layer.forward_ms + e.layer.backward_ms;
    const double link = link_ms(cost, ranks, s, b);
    const double capacity = cost.device_bytes(type);
    // Stage s needs at least one layer and must leave one for each later stage.
    for (int j = s + 1; j <= L - (S - s - 1); j++) {
      if (s == S - 1 && j != L) continue;
      for (int i = j - 1; i >= s; i--) {
        if (best[s][i] == kInf) continue;
        const LayerRange r{i, j};
        // Memory grows with the layer count: once a range does not fit, longer ones do not either.
        if (cost.memory_bytes(r, b, S - s) > capacity) break;
        double ms = (j - i) * layer + link;
        if (i == 0) ms += e.embedding.forward_ms + e.embedding.backward_ms;
        if (j == L) ms += e.head.forward_ms + e.head.backward_ms;
        const double v = std::max(best[s][i], ms);
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
  return finish(cost, ranks, std::move(layers), b);
}

Partition uniform_partition(const CostModel& cost, const std::vector<int>& ranks, int b) {
  const int S = static_cast<int>(ranks.size());
  const int L = cost.model().num_layers;
  std::vector<LayerRange> layers;
  for (int s = 0, at = 0; s < S; s++) {
    const int n = L / S + (s < L % S ? 1 : 0);
    layers.push_back({at, at + n});
    at += n;
  }
  return finish(cost, ranks, std::move(layers), b);
}

}  // namespace eth::planner

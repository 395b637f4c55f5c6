// The intra-pipeline search: given a pipeline's stages (the ranks of each, in stage order) and a
// micro-batch size, choose the layer boundaries that minimise the slowest stage (its slowest
// rank's compute plus the transfers at its boundaries, stage_cost.hpp) while every rank fits its
// device's memory, 1F1B in-flight activations included. Dynamic programming over (stage, layers
// covered): O(S L^2).
#pragma once

#include <optional>
#include <vector>

#include "lib/planner/stage_cost.hpp"

namespace eth::planner {

struct Partition {
  std::vector<LayerRange> layers;   // one per stage, covering [0, L) in order
  double max_stage_ms = 0;          // slowest stage, per micro-batch (forward + backward + transfers)
  double sum_stage_ms = 0;          // sum over stages
};

// Best partition of the model's layers over `stages`; nothing when no partition fits memory,
// there are more stages than layers, or a stage has more ranks than b samples.
std::optional<Partition> partition_layers(const CostModel& cost, const StageRanks& stages, int b);

// Equal layers per stage (the first L mod S stages one more), as Megatron splits them.
Partition uniform_partition(const CostModel& cost, const StageRanks& stages, int b);

}  // namespace eth::planner

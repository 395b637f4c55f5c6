// The intra-pipeline search: given a pipeline's devices in stage order and a micro-batch size,
// choose the layer boundaries that minimise the slowest stage (compute plus the transfers at
// its boundaries) while every stage fits its device's memory, 1F1B in-flight activations
// included. Dynamic programming over (stage, layers covered): O(S L^2).
#pragma once

#include <optional>
#include <vector>

#include "lib/planner/cost_model.hpp"

namespace eth::planner {

struct Partition {
  std::vector<LayerRange> layers;   // one per stage, covering [0, L) in order
  double max_stage_ms = 0;          // slowest stage, per micro-batch (forward + backward + transfers)
  double sum_stage_ms = 0;          // sum over stages
};

// Cost per micro-batch of stage s (of ranks.size() stages) holding `layers` at micro-batch b:
// compute plus one activation and one gradient transfer at each of its boundaries.
double stage_ms(const CostModel& cost, const std::vector<int>& ranks, int s, LayerRange layers, int b);
// Whether stage s fits its rank's memory with the activations of S - s micro-batches in flight.
bool stage_fits(const CostModel& cost, const std::vector<int>& ranks, int s, LayerRange layers, int b);

// Best partition of the model's layers over `ranks` (one rank per stage, in stage order);
// nothing when no partition fits memory (or there are more stages than layers).
std::optional<Partition> partition_layers(const CostModel& cost, const std::vector<int>& ranks, int b);

// Equal layers per stage (the first L mod S stages one more), as Megatron splits them.
Partition uniform_partition(const CostModel& cost, const std::vector<int>& ranks, int b);

}  // namespace eth::planner

// eth_profile's measurement: times the project's own kernels (eth::Stage on a backend) for the
// embedding, one transformer layer and the head + loss, forward and backward, per micro-batch
// size, as medians of several repetitions. Per-kind costs are differences of three one-layer
// stages of a 3-layer copy of the model: first (embedding + layer), middle (layer), last
// (layer + head); a difference below zero (noise) is clamped to zero.
#pragma once

#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "lib/planner/cost_model.hpp"

namespace eth::planner {

struct MeasureOptions {
  std::vector<int> micro_batches = {1, 2, 4, 8};
  int seq_len = 64;
  int repetitions = 5;
};

Profile measure_profile(kernels::Backend& backend, const GptConfig& model, const std::string& device_type,
                        const MeasureOptions& options);

}  // namespace eth::planner

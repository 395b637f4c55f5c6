// Balancing a batch by speed, shared by the planner (lib/planner/search.cpp, stage_cost.cpp) and
// online re-balancing (lib/runtime/rebalance.hpp): the same two functions decide a plan's split from
// profiles and a running job's split from measured rates.
#pragma once

#include <optional>
#include <vector>

namespace eth {

// Samples of a micro-batch of b >= speeds.size() for ranks of the given speeds (samples per
// ms), each at least one, proportional to speed, largest remainders first (ties to the lower
// index).
std::vector<int> split_by_speed(int b, const std::vector<double>& speeds);

// One pipeline under the linear 1F1B model: c micro-batches take (c - 1) * max_stage_ms +
// sum_stage_ms, with the costs of one micro-batch of `micro_batch` samples.
struct PipelineRate {
  double max_stage_ms = 0;  // its slowest stage
  double sum_stage_ms = 0;  // all its stages
  int micro_batch = 1;
  int min_last = 1;         // the fewest samples a smaller last micro-batch may have
  double ms(int micro_batches) const { return (micro_batches - 1) * max_stage_ms + sum_stage_ms; }
};

// Water-filling: samples per pipeline, adding up to global_batch, so that all pipelines finish
// together under the linear model; whole micro-batches where possible, the samples left over
// (fewer than a micro-batch) as a smaller last micro-batch of the pipeline where they cost
// least. `ms` (optional) receives the slowest pipeline's time, a smaller last micro-batch
// charged as a whole one. Nothing when the batch holds less than one micro-batch per pipeline,
// or when the samples left over are fewer than every pipeline's min_last.
std::optional<std::vector<int>> balance_samples(const std::vector<PipelineRate>& pipes, int global_batch,
                                                double* ms = nullptr);

}  // namespace eth

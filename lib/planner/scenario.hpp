// A planning scenario (inputs/scenarios/*.yaml): what eth_plan --scenario, bench_planner and the
// planner's tests plan for.
#pragma once

#include <string>
#include <vector>

#include "lib/planner/micro_batches.hpp"

namespace eth::planner {

// inputs/scenarios/*.yaml: a topology and a model (paths relative to the scenario file), the
// global batch and sequence length, optionally the micro-batch sizes to try.
struct Scenario {
  std::string source;
  std::string name;
  std::string topology_path;
  std::string model_path;
  int global_batch = 0;
  int seq_len = 0;
  std::vector<int> micro_batches = kDefaultMicroBatches;
};
Scenario load_scenario(const std::string& path);

}  // namespace eth::planner

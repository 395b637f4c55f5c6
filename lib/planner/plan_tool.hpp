// The eth_plan flow (scenario or files, options, search or baseline or evaluation, the summary),
// so that app/eth_plan.cpp only parses options.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "kernels/precision.hpp"

namespace eth::planner {

struct PlanToolOptions {
  std::string scenario;                 // or the four below
  std::string topology, model;
  int global_batch = 0, seq_len = 0;
  std::vector<int> micro_batches;       // empty: the scenario's, else kDefaultMicroBatches
  std::string profiles_dir = "inputs/profiles";
  std::vector<std::string> profile_files;
  std::string out = "plan.yaml";
  std::string baseline;                 // "", "uniform", "layer-balanced" or "metis"
  std::string evaluate;                 // a plan file to simulate instead of searching
  bool shard_optimizer = false;         // --evaluate: with sharded optimizer state (memory)
  std::string memory_savers = "all";    // what the search may trade: "all" (recomputation, sharding), "recompute", "none"
  int top = 1;
  int max_stage_width = 0;              // 0: no limit; 1: one rank per stage
  std::string draw;                     // set: the chosen plan's SVG drawing (plan_drawing.hpp) here
  kernels::Precision precision = kernels::Precision::automatic;  // what the job trains in: the GEMMs' rate
};
// Plans (or evaluates) and prints the summary; writes the chosen plan to options.out.
void run_plan_tool(const PlanToolOptions& options, std::ostream& out);

}  // namespace eth::planner

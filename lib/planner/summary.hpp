// The eth_plan flow (scenario files, options, the summary table) and the eth_profile flow, so
// that the programs in app/ only parse options.
#pragma once

#include <mpi.h>

#include <ostream>
#include <string>
#include <vector>

#include "lib/planner/search.hpp"

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
  std::vector<int> micro_batches = {1, 2, 4, 8};
};
Scenario load_scenario(const std::string& path);

struct PlanToolOptions {
  std::string scenario;                 // or the four below
  std::string topology, model;
  int global_batch = 0, seq_len = 0;
  std::vector<int> micro_batches;       // empty: the scenario's, else {1, 2, 4, 8}
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
};
// Plans (or evaluates) and prints the summary; writes the chosen plan to options.out.
void run_plan_tool(const PlanToolOptions& options, std::ostream& out);

// The plan's table (per stage: ranks, layers, samples, split, recomputation, fullest rank's
// memory), its times, and print_memory.
void print_summary(std::ostream& out, const CostModel& cost, const Candidate& c);
// Each rank's predicted peak memory by what holds it, against its device's.
void print_memory(std::ostream& out, const Topology& topo, const std::vector<MemoryBytes>& memory);

struct ProfileToolOptions {
  std::string model;
  std::string device_type = "cpu-rank";
  std::string out;
  std::vector<int> micro_batches = {1, 2, 4, 8};
  int seq_len = 64;
  int repetitions = 5;
  std::string estimate_topology;        // set: write roofline estimates for its device types
  std::string out_dir = "inputs/profiles";
  int local_rank = 0, local_ranks = 1;  // this rank among the job's ranks on its host: its GPU
};
// Every rank of `ranks` measures in lockstep (measure.hpp); rank 0 writes the profile and `out`.
void run_profile_tool(const ProfileToolOptions& options, MPI_Comm ranks, std::ostream& out);

}  // namespace eth::planner

// Zero-configuration launch: `mpirun -np N eth_train --model M --train-data D` with no topology
// and no plan. The job describes itself (topology_discovery.hpp), rank 0 plans it with the
// HPP search and the profiles it finds (roofline estimates for the rest), and every rank trains
// the plan rank 0 chose.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "lib/plan/plan.hpp"
#include "lib/plan/topology.hpp"

namespace eth::planner {

struct AutoPlanRequest {
  std::string model_path;
  int global_batch = 0;
  int seq_len = 0;
  std::vector<int> micro_batches = {1, 2, 4, 8};
  std::string profiles_dir = "inputs/profiles";  // skipped when it does not exist
  std::vector<std::string> profile_files;        // preferred over the directory's
  std::string output_dir;                        // rank 0 writes topology.yaml and plan.yaml here
};

struct PlannedJob {
  Topology topology;
  Plan plan;
};

// Collective over every rank of the job (world_comm()). Rank 0 prints the profiles used and the plan (one table) to
// `log`, and writes OUTPUT_DIR/topology.yaml and OUTPUT_DIR/plan.yaml; every rank returns the
// same topology and plan. A mistake (no plan fits, an unreadable profile) is an AgreedError on
// every rank.
PlannedJob plan_this_job(const AutoPlanRequest& request, std::ostream& log);

}  // namespace eth::planner

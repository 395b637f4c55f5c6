// Zero-configuration launch: `mpirun -np N eth_train --model M --train-data D` with no topology
// and no plan. The job describes itself (topology_discovery.hpp), rank 0 plans it with the
// HPP search and the profiles it finds (roofline estimates for the rest), and every rank trains
// the plan rank 0 chose.
#pragma once

#include <ostream>

#include "lib/job/train_options.hpp"
#include "lib/model/model_config.hpp"
#include "lib/plan/plan.hpp"
#include "lib/plan/precision_paths.hpp"
#include "lib/plan/topology.hpp"
#include "lib/planner/cost_model.hpp"

namespace eth::planner {

// Collective over every rank of the job (world_comm()). Rank 0 plans `topology` for `model` at
// the options' --batch and --seq-len with the profiles of --profiles and --profile, prints the
// profiles used and the plan (one table) to `log`, and writes OUTPUT_DIR/topology.yaml and
// OUTPUT_DIR/plan.yaml; every rank returns the same plan. A mistake (no plan fits, an
// unreadable profile) is an AgreedError on every rank.
Plan plan_this_job(const TrainOptions& options, const ModelConfig& model, const Topology& topology,
                   const PrecisionPaths& paths, std::ostream& log);

// The cost model of a job: the profiles of --profiles and --profile for the topology's device
// types on their paths (`paths`), roofline estimates for the rest (named on `log` when given).
// Keeps a reference to `topology`. Throws InputError for an unreadable profile or one of
// another path.
CostModel job_cost_model(const TrainOptions& options, const ModelConfig& model, const Topology& topology,
                         const PrecisionPaths& paths, std::ostream* log);

}  // namespace eth::planner

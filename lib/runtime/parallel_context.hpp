// Every rank's place in a job and the communicators it needs, built once from topology + plan:
// the one place that computes which rank is whose neighbour.
//
// Groups are created on every rank in one global order (gradient blocks, tied embedding, all
// training ranks), each collective over its own members only, so overlapping groups cannot
// deadlock.
#pragma once

#include <vector>

#include "lib/model/model_config.hpp"
#include "lib/plan/grad_blocks.hpp"
#include "lib/plan/plan.hpp"
#include "lib/plan/precision_paths.hpp"
#include "lib/plan/topology.hpp"
#include "mpi_topology/process_group.hpp"
#include "mpi_topology/row_exchange.hpp"

namespace eth {

struct ParallelContext {
  int world_rank = 0;
  int world_size = 1;
  RankRole role;                          // pipeline, stage, position in stage, samples
  int stages = 1;                         // depth of this rank's pipeline
  std::vector<int> node_of_rank;          // from the topology's node list
  // What each rank's stage stores, from its precision path: rows arriving from a rank of the
  // other 16-bit format are converted on arrival (lib/runtime/stage_transfers.hpp).
  std::vector<kernels::ElementType> storage_of_rank;

  std::vector<GradBlock> blocks;          // every gradient block of the plan
  std::vector<ProcessGroup> block_groups; // per block; this rank is a member of its own blocks
  ProcessGroup tied;                      // first and last stages of every pipeline; none when untied
  ProcessGroup flat;                      // every training rank as one node: flat all-reduces

  // Micro-batch rows (samples) between this stage and its neighbours: activations flow from
  // previous to next, gradients back. Empty on the first (previous) or last (next) stage.
  struct Exchanges {
    RowExchange from_previous, to_next, grads_from_next, grads_to_previous;
  };
  Exchanges full;   // of a full micro-batch (the stages' split)
  Exchanges last;   // of a smaller last micro-batch (last_split), when the pipeline has one
  const Exchanges& exchanges(bool short_micro_batch) const { return short_micro_batch ? last : full; }

  bool first_stage() const { return role.stage == 0; }
  bool last_stage() const { return role.stage == stages - 1; }
};

// Collective over every rank of the job (world_comm()), on a plan valid for the topology and model
// (validate_plan) and a topology of the job's ranks: eth_train's load_job checks both, once.
// `precision`: the job's paths on `topology` (precision_paths).
ParallelContext build_parallel_context(const Topology& topology, const Plan& plan, const ModelConfig& model,
                                       const PrecisionPaths& precision);

// The same job under `plan`, a plan of the same stages with another batch split (re-balancing):
// the communicators are kept (the groups follow the stages alone), the role's samples and the
// row exchanges follow the new split. Not collective.
ParallelContext with_batch_split(ParallelContext ctx, const Plan& plan);

}  // namespace eth

// The job description: what eth_train's options resolve to, decided once before any rank
// allocates. Every later part (the trainer, the start-up table, the step report) reads it and
// decides nothing of its own about where the model, topology or plan came from.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "lib/io/checkpoint.hpp"
#include "lib/io/token_data.hpp"
#include "lib/job/train_options.hpp"
#include "lib/model/model_config.hpp"
#include "lib/plan/plan.hpp"
#include "lib/plan/precision_paths.hpp"
#include "lib/plan/topology.hpp"

namespace eth {

// Where the plan came from. A resumed run may further take its batch split from the checkpoint
// (Job::split_resumed).
enum class PlanSource {
  file,       // --topology and --plan
  automatic,  // several ranks without them: rank 0 planned the discovered topology
  one_rank,   // one rank without them: the whole model, the batch in micro-batches
};

struct Job {
  TrainOptions options;       // as given, but --resume resolved ("latest": the file it found)
  int world_size = 1;
  ModelConfig model;            // read once, here
  Topology topology;          // --topology, or the job as it describes itself
  PrecisionPaths precision;   // --precision resolved for the job, and each device type's path
  Plan plan;                  // validated against topology, model and world size
  PlanSource plan_source = PlanSource::file;
  CheckpointHeader resume;    // step 0: a fresh start; its seed is the run's
  bool split_resumed = false; // the plan's batch split is the checkpoint's (re-balanced) one
  std::vector<TokenShard> train, val;  // read and checked; the trainer takes them over

  // Sharded optimizer state: --shard-optimizer, or blocks the plan shards.
  bool sharded_optimizer() const { return options.adamw.shard || !plan.sharded_blocks.empty(); }
};

// Collective over every rank of the job (world_comm()). Installs the preemption handlers, checks
// every option rule (lib/job/job_rules.hpp), arms the collective watchdog, reads the model, topology, plan and data, resolves --resume
// and --precision (on every device type: a path one cannot take is an AgreedError), plans
// the job when there is no plan and several ranks (rank 0 prints what it planned to `log`), and
// on rank 0 creates OUTPUT_DIR. A mistake on any rank is an AgreedError on every rank.
Job load_job(const TrainOptions& options, std::ostream& log);

const char* plan_source_name(PlanSource source);

}  // namespace eth

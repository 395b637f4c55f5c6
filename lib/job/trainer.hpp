// A training job: one rank per device, each running its stage of its pipeline (or, without a
// plan, the whole model on one rank). Rank 0 prints a line per step and writes metrics.jsonl;
// --trace writes one Chrome trace of every rank.
#pragma once

#include <cstdint>
#include <ostream>
#include <optional>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "lib/model/lr_schedule.hpp"
#include "lib/model/optimizer.hpp"
#include "lib/runtime/fault_injection.hpp"
#include "lib/runtime/grad_sync.hpp"
#include "lib/runtime/rebalance.hpp"
#include "lib/runtime/slowdown.hpp"

namespace eth {

struct TrainOptions {
  std::string model_path;
  std::string topology_path;             // with plan_path; both empty: one rank, no plan
  std::string plan_path;
  // Instead of the two files: a topology and plan already in hand (a zero-configuration launch
  // planned them, lib/job/auto_plan.hpp).
  std::optional<Topology> topology;
  std::optional<Plan> plan;
  std::vector<std::string> train_shards;
  std::vector<std::string> val_shards;   // empty: no validation
  int global_batch = 8;                  // without a plan: samples per optimizer step
  int micro_batch = 8;                   // without a plan: samples per forward/backward
  int seq_len = 64;                      // T
  int steps = 20;
  LrSchedule lr;                         // total_steps is taken from `steps`
  AdamWConfig adamw;
  GradSyncMode grad_sync = GradSyncMode::block;
  uint64_t seed = 1337;                  // parameters and data order
  int eval_every = 0;                    // 0: only after the last step
  int eval_samples = 32;                 // validation windows per evaluation
  std::string output_dir = "out";
  std::string trace_path;                // Chrome trace JSON, empty: none
  std::string save_params_path;          // whole model after the last step, raw float32
  int checkpoint_every = 0;              // HDF5 checkpoint every N steps and after the last; 0: none
  int keep_checkpoints = 0;              // the newest N complete checkpoints are kept; 0: all
  std::string resume_path;               // continue from this checkpoint (any plan of the same model),
                                         // "latest": OUTPUT_DIR's newest undamaged one
  std::optional<FaultSpec> fault;        // --inject-fault, for tests (lib/runtime/fault_injection.hpp)
  double collective_timeout_s = 300;     // the collective watchdog (mpi_topology/watchdog.hpp); 0: off
  RebalanceOptions rebalance;            // online re-balancing of the batch split (lib/runtime/rebalance.hpp)
  std::vector<SlowdownRule> slowdowns;   // --slowdown, for tests and benchmarks (lib/runtime/slowdown.hpp)
};

// Collective over every rank of the job (world_comm()). A user's mistake on any rank becomes an AgreedError on every
// rank. SIGUSR1 or SIGTERM (lib/runtime/preemption.hpp) ends it after the current step with a
// checkpoint. Returns the last training loss.
double train(const TrainOptions& options, kernels::Backend& backend, std::ostream& log);

}  // namespace eth

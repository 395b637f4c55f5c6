// What the user asked eth_train for: its command line, parsed (app/eth_train.cpp) and not yet
// checked against anything. load_job (lib/job/job.hpp) checks it and resolves it into a Job.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/device_settings.hpp"
#include "kernels/precision.hpp"
#include "lib/model/loss_scale.hpp"
#include "lib/model/lr_schedule.hpp"
#include "lib/model/optimizer.hpp"
#include "lib/runtime/fault_injection.hpp"
#include "lib/runtime/grad_sync.hpp"
#include "lib/runtime/rebalance.hpp"
#include "lib/runtime/slowdown.hpp"
#include "mpi_topology/comm_settings.hpp"

namespace eth {

struct TrainOptions {
  // What the environment says (app/environment.hpp), read once by the program.
  kernels::DeviceSettings device;
  CommSettings comm;
  // The job.
  std::string model_path;
  std::string topology_path;             // with plan_path; both empty: the job describes itself
  std::string plan_path;                 // empty: the whole model on one rank, or planned (several ranks)
  std::string profiles_dir = "inputs/profiles";  // planning without a plan: skipped when absent
  std::vector<std::string> profile_files;        // ... and these, preferred over the directory's
  std::vector<std::string> train_shards;
  std::vector<std::string> val_shards;   // empty: no validation
  int global_batch = 8;                  // without a plan: samples per optimizer step
  int micro_batch = 8;                   // one rank without a plan: samples per forward/backward
  int seq_len = 64;                      // T
  std::string resume_path;               // continue from this checkpoint (any plan of the same model),
                                         // "latest": OUTPUT_DIR's newest undamaged one
  // Optimisation.
  int steps = 20;
  LrSchedule lr;                         // total_steps is taken from `steps`
  AdamWConfig adamw;
  uint64_t seed = 1337;                  // parameters and data order
  kernels::Precision precision = kernels::Precision::automatic;  // resolved by load_job (Job::precision)
  // Dynamic loss scaling (lib/model/loss_scale.hpp): `dynamic` is set by load_job, on where a rank's
  // path stores fp16; the initial scale and the window come from the command line.
  LossScaleConfig loss_scale;
  // Parallelism.
  GradSyncMode grad_sync = GradSyncMode::block;
  RebalanceOptions rebalance;            // online re-balancing of the batch split (lib/runtime/rebalance.hpp)
  double collective_timeout_s = 300;     // the collective watchdog (mpi_topology/watchdog.hpp); 0: off
  // Output.
  int eval_every = 0;                    // 0: only after the last step
  int eval_samples = 32;                 // validation windows per evaluation
  std::string output_dir = "out";
  std::string trace_path;                // Chrome trace JSON, empty: none
  std::string save_params_path;          // whole model after the last step, raw float32
  int checkpoint_every = 0;              // HDF5 checkpoint every N steps and after the last; 0: none
  int keep_checkpoints = 0;              // the newest N complete checkpoints are kept; 0: all
  int sample_every = 0;                  // rank 0 prints generated text every N steps; 0: never
  int sample_tokens = 32;                // tokens per sample
  std::string sample_prompt;             // empty: <|endoftext|>, the start of a document
  std::string tokenizer_dir;             // GPT-2's encoder.json and vocab.bpe, for samples
  // Testing.
  std::optional<FaultSpec> fault;        // --inject-fault (lib/runtime/fault_injection.hpp)
  std::vector<SlowdownRule> slowdowns;   // --slowdown (lib/runtime/slowdown.hpp)
  double modelled_compute_ms = 0;        // --modelled-compute-ms (ibid.); 0: the re-balancer measures
};

}  // namespace eth

// Training on one rank: the whole model as one stage, the global batch as a sequence of
// micro-batches whose gradients accumulate, then clipping and AdamW. Prints a line per step and
// writes metrics.jsonl to the output directory.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "lib/lr_schedule.hpp"
#include "lib/optimizer.hpp"

namespace eth {

struct TrainOptions {
  std::string model_path;
  std::vector<std::string> train_shards;
  std::vector<std::string> val_shards;   // empty: no validation
  int global_batch = 8;                  // samples per optimizer step
  int micro_batch = 8;                   // samples per forward/backward
  int seq_len = 64;                      // T
  int steps = 20;
  LrSchedule lr;                         // total_steps is taken from `steps`
  AdamWConfig adamw;
  uint64_t seed = 1337;                  // parameters and data order
  int eval_every = 0;                    // 0: only after the last step
  int eval_batches = 4;                  // micro-batches of validation per evaluation
  std::string output_dir = "out";
};

// Throws InputError for bad options or files. Returns the last training loss.
double train_single_rank(const TrainOptions& options, kernels::Backend& backend, std::ostream& log);

}  // namespace eth

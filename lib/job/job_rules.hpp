// Every rule eth_train's options must keep, each checked in exactly one place, before any rank
// allocates. A broken rule is an InputError of one line naming the option (or file) and field,
// what was expected and what was given.
#pragma once

#include "lib/job/job.hpp"
#include "lib/job/train_options.hpp"

namespace eth {

// The rules among the options themselves and against the number of ranks: no file is read.
void check_options(const TrainOptions& options, int world_size);

// The rules between the options and the model: the sequence length.
void check_against_model(const TrainOptions& options, const ModelConfig& model);

// The rules between the options and what they resolved to: the world size against the
// topology, the plan against topology and model (validate_plan), sharding against the gradient
// sync, --inject-fault against the plan's blocks, and
// --resume against the checkpoint's step and global batch.
void check_job(const Job& job);

}  // namespace eth

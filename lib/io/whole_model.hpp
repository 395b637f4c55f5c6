// The whole model's parameters in ETH's one-stage layout, ParamLayout(model, {0, L}) (P floats),
// out of a checkpoint of any plan and into a step-0 checkpoint: what the converters to and from
// other formats (lib/io/llmc_model.hpp, lib/io/hf_gpt2.hpp) share.
#pragma once

#include <string>
#include <vector>

#include "lib/model/model_config.hpp"

namespace eth {

// Every parameter of the checkpoint (any step) in the one-stage layout: (P). An InputError
// naming the file unless it is an undamaged checkpoint of `model`.
std::vector<float> read_whole_params(const std::string& checkpoint_path, const ModelConfig& model);

// A checkpoint of step 0 holding `whole` (P) and zero AdamW moments, which `eth_train --resume`
// starts from under any plan. Collective over every rank of the job (world_comm()); rank 0
// writes, so one rank is enough.
void write_step0_checkpoint(const std::string& checkpoint_path, const ModelConfig& model, const std::vector<float>& whole);

// Whether this rank is the job's rank 0, the one writer of a converted file.
bool is_rank_zero();

}  // namespace eth

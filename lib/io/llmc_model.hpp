// llm.c's GPT-2 model file (Karpathy's llm.c, train_gpt2.c, version 3), so that GPT-2 weights
// can start an ETH run and ETH's weights can be sampled with llm.c (docs/formats.md, "llm.c
// model file"):
//
//   int32 header[256]: [0] 20240326 (magic), [1] 3 (version), [2] maxT, [3] V, [4] L, [5] NH,
//                      [6] C, [7] Vp; the rest 0
//   float32 parameters, each kind stacked over the layers, in llm.c's order:
//     wte (Vp, C), wpe (maxT, C), ln1w (L, C), ln1b (L, C), qkvw (L, 3C, C), qkvb (L, 3C),
//     attprojw (L, C, C), attprojb (L, C), ln2w (L, C), ln2b (L, C), fcw (L, 4C, C),
//     fcb (L, 4C), fcprojw (L, C, 4C), fcprojb (L, C), lnfw (C), lnfb (C)
//
// The buffers here are the whole model in ETH's one-stage layout, ParamLayout(model, {0, L}):
// every llm.c tensor is one of its tensors, per layer, with the same shape.
#pragma once

#include <string>
#include <vector>

#include "lib/model/model_config.hpp"

namespace eth {

// Writes `whole` (ParamLayout(model, {0, L}).size() floats). An InputError when the file cannot
// be written.
void write_llmc_model(const std::string& path, const ModelConfig& model, const std::vector<float>& whole);

// The parameters of an llm.c model file in ETH's one-stage layout. An InputError naming the file
// and field unless it is a version-3 llm.c file of `model`'s dimensions and full length.
std::vector<float> read_llmc_model(const std::string& path, const ModelConfig& model);

// eth_convert: an llm.c model file into an ETH checkpoint of step 0 (its parameters, zero AdamW
// moments), which `eth_train --resume` starts from under any plan; and a checkpoint's parameters
// (any step) into an llm.c model file. Collective over every rank of the job (world_comm()) (one rank is enough).
void import_llmc_model(const std::string& llmc_path, const ModelConfig& model, const std::string& checkpoint_path);
void export_llmc_model(const std::string& checkpoint_path, const ModelConfig& model, const std::string& llmc_path);

}  // namespace eth

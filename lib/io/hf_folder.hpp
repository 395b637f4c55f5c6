// A Hugging Face model folder of GPT-2, as transformers' save_pretrained writes one and
// from_pretrained reads it (docs/formats.md, "Hugging Face folder"):
//
//   model.safetensors        the tensors (lib/io/hf_gpt2.hpp), F32
//   config.json              GPT2Config: vocab_size, n_positions, n_embd, n_layer, n_head, ...
//   generation_config.json   bos/eos token ids
//   vocab.json, merges.txt   GPT-2's BPE (encoder.json and vocab.bpe of the tokenizer folder,
//   tokenizer_config.json    as they are), GPT2Tokenizer with model_max_length = max_seq_len;
//                            written only for GPT-2's vocabulary (vocab_size 50257)
#pragma once

#include <string>
#include <vector>

#include "lib/model/model_config.hpp"

namespace eth {

// eth_convert --export-hf: a checkpoint's parameters (any step, any plan) into the folder `dir`
// (created). The tokenizer comes from `tokenizer_dir` (encoder.json, vocab.bpe). Returns a note
// for the user, empty unless something was left out. Collective over every rank of the job;
// rank 0 writes.
std::string export_hf_model(const std::string& checkpoint_path, const ModelConfig& model, const std::string& dir,
                            const std::string& tokenizer_dir);

// The folder's model.safetensors (F32, F16 or BF16) as the whole model's fp32 parameters in ETH's
// one-stage layout, on this rank alone; its config.json must describe `model` (an InputError
// names the field and both values otherwise). What eth_sample --hf generates from.
std::vector<float> read_hf_model(const std::string& dir, const ModelConfig& model);

// eth_convert --import-hf: the folder's model.safetensors (F32, F16 or BF16) into a step-0
// checkpoint for `eth_train --resume`. Its config.json must describe `model`: an InputError
// names the field and both values otherwise. Collective over every rank of the job.
void import_hf_model(const std::string& dir, const ModelConfig& model, const std::string& checkpoint_path);

}  // namespace eth

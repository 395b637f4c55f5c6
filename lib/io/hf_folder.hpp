// A Hugging Face model folder of GPT-2 or Llama, as transformers' save_pretrained writes one and
// from_pretrained reads it (docs/formats.md, "Hugging Face folder"):
//
//   model.safetensors        the tensors (lib/io/hf_gpt2.hpp, lib/io/hf_llama.hpp), F32 or BF16;
//                            a Llama's may be shards with model.safetensors.index.json
//                            (lib/io/hf_weights.hpp)
//   config.json              GPT2Config (vocab_size, n_positions, n_embd, n_layer, n_head, ...)
//                            or LlamaConfig (hidden_size, num_key_value_heads, rope_scaling, ...)
//   generation_config.json   bos/eos token ids
//   vocab.json, merges.txt   GPT-2's BPE (encoder.json and vocab.bpe of the tokenizer folder,
//   tokenizer_config.json    as they are), GPT2Tokenizer with model_max_length = max_seq_len;
//                            written only for GPT-2's vocabulary (vocab_size 50257)
#pragma once

#include <string>
#include <vector>

#include "lib/io/safetensors.hpp"
#include "lib/model/model_config.hpp"

namespace eth {

// How --export-hf stores the tensors: the element type, and the most bytes of tensor data one
// safetensors file holds before the next shard begins (transformers' max_shard_size).
struct HfExportOptions {
  SafetensorsDtype dtype = SafetensorsDtype::f32;
  size_t max_shard_bytes = 5'000'000'000;  // transformers' default, "5GB"
};

// What eth_convert requires of `model` (read from `model_path`) before converting: what the stage
// computes (Stage::check_computes), and for llm.c's files (hugging_face false) GPT-2's parts,
// which are all those files hold. An InputError naming `model_path` otherwise.
void check_converts(const ModelConfig& model, const std::string& model_path, bool hugging_face);

// eth_convert --export-hf: a checkpoint's parameters (any step, any plan) into the folder `dir`
// (created); its files appear together or not at all (written under temporary names, renamed
// when all are). The tokenizer comes from `tokenizer_dir` (encoder.json, vocab.bpe; GPT-2's
// vocabulary only). Returns a note for the user, empty unless something was left out.
// Collective over every rank of the job; rank 0 writes.
std::string export_hf_model(const std::string& checkpoint_path, const ModelConfig& model, const std::string& dir,
                            const std::string& tokenizer_dir, const HfExportOptions& options = {});

// The folder's model.safetensors (F32, F16 or BF16; a Llama's sharded too) as the whole model's
// fp32 parameters in ETH's one-stage layout, on this rank alone; its config.json must describe
// `model` (an InputError names the key and both values otherwise: a Llama's config.json is read
// as a ModelConfig, lib/model/hf_model_config.hpp, and compared field by field). What eth_sample
// --hf generates from.
std::vector<float> read_hf_model(const std::string& dir, const ModelConfig& model);

// eth_convert --import-hf: the folder's model.safetensors (F32, F16 or BF16) into a step-0
// checkpoint for `eth_train --resume`. Its config.json must describe `model`: an InputError
// names the field and both values otherwise. Collective over every rank of the job.
void import_hf_model(const std::string& dir, const ModelConfig& model, const std::string& checkpoint_path);

}  // namespace eth

// A Hugging Face config.json as a ModelConfig: LlamaForCausalLM (the llama family) and
// GPT2LMHeadModel (gpt2). Every key of transformers' LlamaConfig that changes what the model
// computes is read or refused; keys that change nothing ETH computes (dtypes, token ids,
// initializer_range, use_cache) are ignored. docs/formats.md, "Hugging Face config.json".
#pragma once

#include <string>

#include "lib/model/model_config.hpp"

namespace eth {

// The vocabulary rounded up to a multiple of 128 rows, for aligned GEMMs: what ETH pads to.
int padded_vocab(int vocab_size);

// Reads `path`; an InputError naming the file, the key, its value and what is supported for
// anything ETH does not compute (an architecture, `rope_type: yarn`, `hidden_act: gelu` in a
// Llama, heads not a multiple of the K/V heads). The model's name: the folder holding the file.
ModelConfig load_hf_model_config(const std::string& path);

}  // namespace eth

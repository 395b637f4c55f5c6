// GPT-2's tensors as Hugging Face transformers names and stores them (GPT2LMHeadModel, or
// GPT2Model without the "transformer." prefix), against ETH's one-stage layout (P floats,
// lib/model/param_layout.hpp). V = vocab_size, Vp = padded_vocab_size, maxT, C, L:
//
//   transformer.wte.weight             (V, C)     wte (Vp, C), its first V rows: the padded rows
//                                                 are dropped (and zero on the way in)
//   transformer.wpe.weight             (maxT, C)  wpe
//   transformer.h.{l}.ln_1.weight/bias (C)        layer{l}.ln1_w / ln1_b
//   transformer.h.{l}.attn.c_attn.weight (C, 3C)  layer{l}.qkv_w (3C, C) transposed
//   transformer.h.{l}.attn.c_attn.bias   (3C)     layer{l}.qkv_b
//   transformer.h.{l}.attn.c_proj.weight (C, C)   layer{l}.attproj_w (C, C) transposed
//   transformer.h.{l}.attn.c_proj.bias   (C)      layer{l}.attproj_b
//   transformer.h.{l}.ln_2.weight/bias (C)        layer{l}.ln2_w / ln2_b
//   transformer.h.{l}.mlp.c_fc.weight    (C, 4C)  layer{l}.fc_w (4C, C) transposed
//   transformer.h.{l}.mlp.c_fc.bias      (4C)     layer{l}.fc_b
//   transformer.h.{l}.mlp.c_proj.weight  (4C, C)  layer{l}.fcproj_w (C, 4C) transposed
//   transformer.h.{l}.mlp.c_proj.bias    (C)      layer{l}.fcproj_b
//   transformer.ln_f.weight/bias       (C)        lnf_w / lnf_b
//
// transformers' Conv1D computes x @ W + b with W (in, out), the transpose of nn.Linear's (out,
// in), which is ETH's. The LM head is tied to wte: it is not stored; on the way in an
// "lm_head.weight" equal to wte is accepted and ignored, one that differs is refused. The
// attention mask buffers older exports carry (h.{l}.attn.bias, h.{l}.attn.masked_bias) are
// ignored; any other tensor is refused.
#pragma once

#include <string>
#include <vector>

#include "lib/io/safetensors.hpp"
#include "lib/model/model_config.hpp"

namespace eth {

// The model's tensors in transformers' layout, named with the "transformer." prefix, in the
// order above; `whole` (P) must outlive the result, and `storage` receives the transposed copies.
std::vector<SafetensorsTensor> hf_gpt2_tensors(const ModelConfig& model, const std::vector<float>& whole,
                                               std::vector<std::vector<float>>& storage);

// The parameters (P) from a file of transformers' GPT-2 tensors (F32, F16 or BF16, with or
// without the prefix); an InputError naming the file and tensor for anything else.
std::vector<float> read_hf_gpt2_tensors(SafetensorsReader& file, const ModelConfig& model);

}  // namespace eth

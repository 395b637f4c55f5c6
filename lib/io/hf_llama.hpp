// Llama's tensors as Hugging Face transformers names and stores them (LlamaForCausalLM), against
// ETH's one-stage layout (P floats, lib/model/param_layout.hpp). V = vocab_size, Vp =
// padded_vocab_size, C, L, NH, NKV, hs, FC; every matrix nn.Linear's (out, in), as ETH's, in the
// rotate-half layout both compute in (no permutation):
//
//   model.embed_tokens.weight                  (V, C)       wte (Vp, C), its first V rows: the
//                                                           padded rows dropped (zero on the way in)
//   model.layers.{l}.input_layernorm.weight    (C)          layer{l}.ln1_w
//   model.layers.{l}.self_attn.q_proj.weight   (NH hs, C)   layer{l}.qkv_w rows [0, NH hs)
//   model.layers.{l}.self_attn.k_proj.weight   (NKV hs, C)  rows [NH hs, (NH + NKV) hs)
//   model.layers.{l}.self_attn.v_proj.weight   (NKV hs, C)  rows [(NH + NKV) hs, (NH + 2 NKV) hs)
//   model.layers.{l}.self_attn.{q,k,v}_proj.bias            layer{l}.qkv_b, the same slices
//                                                           (attention_bias)
//   model.layers.{l}.self_attn.o_proj.weight   (C, NH hs)   layer{l}.attproj_w (+ .bias: attproj_b)
//   model.layers.{l}.post_attention_layernorm.weight (C)    layer{l}.ln2_w
//   model.layers.{l}.mlp.gate_proj.weight      (FC, C)      layer{l}.fc_w rows [0, FC)
//   model.layers.{l}.mlp.up_proj.weight        (FC, C)      layer{l}.fc_w rows [FC, 2 FC)
//   model.layers.{l}.mlp.down_proj.weight      (C, FC)      layer{l}.fcproj_w
//   (mlp.{gate,up,down}_proj.bias: fc_b's halves and fcproj_b, with mlp_bias)
//   model.norm.weight                          (C)          lnf_w
//   lm_head.weight                             (V, C)       lm_head_w's first V rows, untied;
//                                                           absent when tied (one equal to
//                                                           embed_tokens is accepted on the way in)
//
// Every slice is a run of whole rows, contiguous in both layouts: nothing is copied out. The
// rotary inverse-frequency buffers older exports carry (self_attn.rotary_emb.inv_freq) are
// ignored; any other tensor is refused.
#pragma once

#include <vector>

#include "lib/io/hf_weights.hpp"
#include "lib/io/safetensors.hpp"
#include "lib/model/model_config.hpp"

namespace eth {

// The model's tensors in transformers' names and shapes, in the order above, pointing into
// `whole` (P), which must outlive the result.
std::vector<SafetensorsTensor> hf_llama_tensors(const ModelConfig& model, const std::vector<float>& whole);

// The parameters (P) from a folder's transformers Llama tensors (F32, F16 or BF16); an InputError
// naming the file and tensor (and both shapes) for anything else.
std::vector<float> read_hf_llama_tensors(HfWeights& files, const ModelConfig& model);

}  // namespace eth

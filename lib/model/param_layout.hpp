// Where every parameter of a pipeline stage lives in its one flat buffer. The same layout
// serves parameters, gradients and both AdamW moments, llm.c style. The tensors themselves are
// lib/model/model_tensors.hpp's; this file places them.
//
// A stage owns the layers [begin, end) plus the embedding when begin == 0 and the final norm and
// head when end == L. Its buffer is:
//
//   [embedding: wte (Vp, C), wpe (maxT, C) when learned]   when first
//   [layer begin] ... [layer end-1]                        each layer_size floats, stacked
//   [final: lnf_w (C), lnf_b (C) when layernorm]           when last
//   [head: lm_head_w (Vp, C) untied, or the tied copy of wte when not also first]   when last
//
// so any block is a contiguous slice, which is what block-wise gradient reduction needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/model_tensors.hpp"

namespace eth {

enum class BlockKind { embedding, layer, final_norm, head };

struct ParamTensor {
  std::string name;            // global name, the same on every stage: "layer3.qkv_w"
  std::vector<size_t> shape;
  size_t offset = 0;           // in floats, within the stage buffer
  size_t size = 0;
  bool weight_decay = false;   // matrices decay; biases, norm weights do not
  TensorInit init = TensorInit::normal;
};

struct ParamBlock {
  BlockKind kind;
  int layer = -1;              // for BlockKind::layer
  size_t offset = 0;
  size_t size = 0;
};

// Offsets of the tensors inside one transformer layer block; kAbsent for those the model lacks
// (biases, a layernorm's bias).
struct LayerOffsets {
  static constexpr size_t kAbsent = SIZE_MAX;

  size_t ln1_w, ln1_b;          // (C)
  size_t qkv_w, qkv_b;          // (QKV, C), (QKV)
  size_t attproj_w, attproj_b;  // (C, NH hs), (C)
  size_t ln2_w, ln2_b;          // (C)
  size_t fc_w, fc_b;            // (F, C), (F)
  size_t fcproj_w, fcproj_b;    // (C, FC), (C)
  size_t size;
};

// The tensor at `offset` of a parameter (or gradient) buffer, or null where the model lacks it
// (LayerOffsets::kAbsent: a bias, a layernorm's bias): what the ops take for "none".
inline kernels::ConstTensor optional_tensor(kernels::ConstTensor buffer, size_t offset) {
  return offset == LayerOffsets::kAbsent ? nullptr : buffer + offset;
}
inline float* optional_tensor(float* buffer, size_t offset) {
  return offset == LayerOffsets::kAbsent ? nullptr : buffer + offset;
}

class ParamLayout {
 public:
  ParamLayout(const ModelConfig& config, LayerRange layers);

  static constexpr size_t kAbsent = LayerOffsets::kAbsent;

  bool has_embedding() const { return layers_.begin == 0; }
  bool has_head() const { return layers_.end == num_layers_; }
  LayerRange layers() const { return layers_; }
  size_t size() const { return size_; }

  size_t wte() const { return embedding_offset_; }                    // (Vp, C)
  size_t wte_size() const { return wte_size_; }
  size_t wpe() const { return embedding_offset_ + wte_size_; }        // (maxT, C), learned positions only
  size_t layer(int l) const;                                          // block of global layer l
  const LayerOffsets& layer_offsets() const { return layer_offsets_; }
  size_t lnf_w() const { return final_offset_; }                      // (C)
  size_t lnf_b() const { return has_norm_bias_ ? final_offset_ + channels_ : kAbsent; }  // (C), layernorm only
  // The LM head's matrix: lm_head_w when untied; tied, the embedding's wte or its copy.
  size_t head_wte() const { return has_embedding() && tied_ ? wte() : head_offset_; }  // (Vp, C)

  // Model units (lib/plan/grad_blocks.hpp): 0 = the embedding, 1..L = layers, L+1 = the final
  // norm. The units a stage holds are contiguous in its buffer. Tied, wte (the embedding's and
  // the head's copy) lies outside them (unit 0 is wpe, empty with rotary positions) and is
  // reduced with the tied-embedding group; untied, unit 0 holds wte and unit L+1 the head.
  size_t unit_offset(int unit) const;
  size_t unit_size(int unit) const;

  const std::vector<ParamBlock>& blocks() const { return blocks_; }
  const std::vector<ParamTensor>& tensors() const { return tensors_; }

 private:
  LayerRange layers_;
  int num_layers_;
  size_t channels_;
  bool tied_;
  bool has_norm_bias_;
  size_t wte_size_;
  size_t wpe_size_;
  LayerOffsets layer_offsets_;
  size_t embedding_offset_ = 0, layers_offset_ = 0, final_offset_ = 0, head_offset_ = 0;
  size_t size_ = 0;
  std::vector<ParamBlock> blocks_;
  std::vector<ParamTensor> tensors_;
};

// GPT-2's initialisation for every family (each tensor's TensorInit: normal(0, 0.02) matrices and
// embeddings, residual projections scaled by 1/sqrt(2L), zero biases, unit norm weights). Each
// value depends only on the seed, its tensor's global name and its index, so every way of
// splitting the model into stages gets the same numbers. Fills `host_params` (layout.size() floats).
void init_parameters(const ModelConfig& config, const ParamLayout& layout, uint64_t seed,
                          float* host_params);

}  // namespace eth

// The one description of a model's tensors, counts and widths, read by everything that needs
// them: the parameter layout (lib/model/param_layout.hpp), the stage's activations, the memory
// model, the cost model and roofline profiles, MFU, checkpoints. Nothing else restates them.
//
// A model is a sequence of blocks: the embedding, L transformer layers, the final norm and the
// LM head. Their tensors, in the order they lie in a stage's buffer:
//
//   embedding   wte (Vp, C); wpe (maxT, C) when positions are learned
//   layer       ln1_w (C), ln1_b (C) [layernorm]
//               qkv_w (QKV, C), qkv_b (QKV) [attention_bias]      QKV = (NH + 2 NKV) hs: q, k, v stacked
//               attproj_w (C, NH hs), attproj_b (C) [attention_bias]
//               ln2_w (C), ln2_b (C) [layernorm]
//               fc_w (F, C), fc_b (F) [mlp_bias]                  F = FC (gelu) or 2 FC (swiglu: gate, up)
//               fcproj_w (C, FC), fcproj_b (C) [mlp_bias]
//   final norm  lnf_w (C), lnf_b (C) [layernorm]
//   head        lm_head_w (Vp, C) when untied; tied: the last stage's copy of wte (unless it is also
//               the first), same name, same values
//
// GPT-2's layer is the twelve tensors of llm.c in llm.c's order; Llama's keeps the same names
// (transformers' q/k/v_proj stacked in qkv_w, gate/up_proj in fc_w, down_proj as fcproj_w).
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

#include "kernels/attention_heads.hpp"
#include "kernels/workspace.hpp"
#include "lib/model/model_config.hpp"

namespace eth {

enum class TensorInit {
  zeros,     // biases
  ones,      // norm weights
  normal,    // normal(0, 0.02): matrices and embeddings
  residual,  // normal(0, 0.02 / sqrt(2 L)): the projections into the residual stream (GPT-2's rule)
};

struct TensorSpec {
  std::string_view name;  // within its block: "qkv_w"; layers prefix "layer<l>."
  size_t rows = 0;        // (rows, cols), or (rows) where cols is 0
  size_t cols = 0;
  TensorInit init = TensorInit::zeros;
  bool weight_decay = false;  // matrices and embeddings decay; biases and norm weights do not

  size_t size() const { return cols == 0 ? rows : rows * cols; }
  std::vector<size_t> shape() const;
};

// A block's tensors in buffer order, without allocating: the planner counts them in its inner
// loops (a layer has at most 12).
class TensorList {
 public:
  void add(TensorSpec t) { items_[count_++] = t; }
  const TensorSpec* begin() const { return items_.data(); }
  const TensorSpec* end() const { return items_.data() + count_; }
  size_t size() const { return count_; }

 private:
  std::array<TensorSpec, 12> items_{};
  size_t count_ = 0;
};

// The tensors of each block, in buffer order.
TensorList embedding_tensors(const ModelConfig& c);
TensorList layer_tensors(const ModelConfig& c);
TensorList final_norm_tensors(const ModelConfig& c);
// The head's own tensor: lm_head_w when untied; the tied copy of wte ("wte") otherwise.
TensorList head_tensors(const ModelConfig& c);

// Each block's floats and AdamW segments (kernels/adamw_segments.hpp: each tensor cut into runs
// of kAdamWSegmentFloats), summed from the lists above. Remembered for the last model asked on
// this thread: the planner asks millions of times for one model.
struct BlockCounts {
  size_t embedding = 0, layer = 0, final_norm = 0, head = 0;                      // floats
  size_t embedding_segments = 0, layer_segments = 0, final_norm_segments = 0, head_segments = 0;
};
BlockCounts block_counts(const ModelConfig& c);

// Parameter counts (floats).
size_t embedding_params(const ModelConfig& c);   // wte (+ wpe)
size_t layer_params(const ModelConfig& c);       // one transformer layer
size_t final_norm_params(const ModelConfig& c);  // lnf_w (+ lnf_b)
size_t head_params(const ModelConfig& c);        // Vp C: lm_head_w, or the tied copy of wte
// A stage holding `layers` (with the embedding when first, the final norm and head when last; a
// tied head's copy only when not also first).
size_t stage_params(const ModelConfig& c, LayerRange layers);
// The model's parameters, each counted once (a tied head is wte): Llama-3-8B's 8.03e9.
double model_params(const ModelConfig& c);

// FLOPs per token. A layer's matmuls: 2 per weight of its matrices, forward; attention's scores
// and their weighted sum: 4 T NH hs forward over the whole T x T square, as the kernels' per-head
// products compute it (the causal half is half of it).
double layer_matmul_flops(const ModelConfig& c);            // forward, per token
double attention_score_flops(const ModelConfig& c, int T);  // forward, per token, whole square
double attention_projection_flops(const ModelConfig& c);    // forward, per token: x -> q, k, v
// The parameters N the FLOP count counts: every one but the embedding (a lookup, no matmul: wte
// and wpe), and the head's Vp x C matrix (tied or not) once: L layer_params + final norm + Vp C.
// GPT-2: L (12 C^2 + 13 C) + Vp C + 2 C.
double flop_parameters(const ModelConfig& c);
// Model FLOPs to train on one token (forward and backward) at sequence length T:
// 6 N + 12 L T NH hs (PaLM appendix B, nanoGPT's estimate_mfu; GPT-2: 6 N + 12 L T C). The
// attention term counts the full T x T score matrix. Recomputation is not counted: it is work the
// hardware does, not the model.
double training_flops_per_token(const ModelConfig& c, int T);

// One layer's activations, widths per token (elements).
struct LayerWidths {
  size_t qkv;     // (N, QKV) the q, k, v projection
  size_t atty;    // (N, NH hs) attention's output
  size_t fc;      // (N, F) the first MLP matmul's output (gate and up side by side for swiglu)
  size_t fc_act;  // (N, FC) the MLP's activation (GELU, or silu(gate) * up)
  // Per token, everything a layer keeps without recomputation: its two norms' outputs, the two
  // residual-stream rows, the four above (the norms' and attention's statistics apart).
  size_t kept(size_t C) const { return 4 * C + qkv + atty + fc + fc_act; }
};
LayerWidths layer_widths(const ModelConfig& c);

// Attention's heads: NH query heads of hs channels sharing NKV key/value heads.
kernels::AttentionHeads attention_heads(const ModelConfig& c);

// The workspace's view of a stage of this model holding `layers` (kernels/workspace.hpp):
// micro-batches of B samples of T tokens, `gathered_rows` late embedding rows (0: none).
kernels::StageShape stage_shape(const ModelConfig& c, LayerRange layers, int B, int T, size_t gathered_rows);

}  // namespace eth

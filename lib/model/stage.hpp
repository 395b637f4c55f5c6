// One pipeline stage of a model of either family (lib/model/model_config.hpp): the layers
// [begin, end) (plus the embedding on the first stage and the final norm + LM head on the last),
// computing one micro-batch of B samples of T tokens at a time. This is the API the pipeline runtime drives:
//
//   first stage:   forward(slot, tokens, nullptr)            -> output(slot)   (B, T, C)
//   middle stage:  forward(slot, nullptr, input)             -> output(slot)
//   last stage:    forward(slot, ...) then loss(slot, targets, true); take_loss_sum() once per step
//   backward:      backward(slot, doutput)  (doutput is ignored on the last stage, which starts
//                  from the dlogits its loss() just left)  -> input_grad()    (B, T, C)
//
// Activations are kept per slot, so several micro-batches can be in flight (1F1B keeps S - s of
// them at stage s of S); the stage's recomputation mode (lib/model/recompute.hpp) says which: the
// rest is recomputed by backward(slot) into one set shared by all slots. B is the capacity: forward(slot, ..., rows) may take fewer samples (a
// smaller last micro-batch), which then use the first rows of every buffer; loss(slot) and
// backward(slot) use the rows of that slot's forward. The last stage has one logits buffer (and,
// under full recomputation, one final norm output): loss(slot) must directly follow
// forward(slot), and backward(slot) directly follow loss(slot), as in every 1F1B schedule. The
// logits are never held whole where they would pass a layer's activations (a 128k vocabulary):
// loss() runs the head in chunks of head_samples() samples, each chunk's logits, losses and
// gradients (dW of the head, the rows of dlnf that backward starts from) at once.
//
// Parameter gradients accumulate over micro-batches as sums over samples; the caller scales by
// 1/global_batch (see the optimizer), so any split of the batch computes the same step.
//
// Storage: activations, their gradients, the stage's input and output and the logits are of the
// backend's element type (Backend::storage: bf16 on the bf16 path, else fp32); parameters,
// their gradients and the norm and attention statistics are fp32 on every path. On the
// bf16 path the kernels read bf16 copies of the parameters, kept beside the masters.
//
// Every call only enqueues work on the backend's stream (kernels/device.hpp): tokens and targets
// go up through pinned buffers, one per slot, each rewritten only after its last upload ran;
// losses are summed on the device. take_loss_sum() is the one place the host waits.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/device_buffer.hpp"
#include "lib/model/float_range.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/model_norm.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/recompute.hpp"

namespace eth {

// Where a first stage's backward leaves its word-embedding gradient rows (Stage::backward).
struct KeptEmbeddingRows {
  kernels::Tensor rows;    // (B, T, C) device, of the stage's storage type
  int32_t* ids = nullptr;  // (B, T) device: their token ids
};

class Stage {
 public:
  // An InputError naming `where` and the part of `config` the stage cannot compute: a layernorm
  // eps other than GPT-2's 1e-5, which the layernorm kernels hold.
  static void check_computes(const ModelConfig& config, const std::string& where);

  Stage(const ModelConfig& config, LayerRange layers, int B, int T, int slots,
        kernels::Backend& backend, Recompute recompute = Recompute::none);

  const ModelConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  int micro_batch() const { return B_; }
  int seq_len() const { return T_; }
  kernels::ElementType storage() const { return storage_; }

  float* params() { return params_.data(); }    // (layout().size()) the fp32 masters
  float* grads() { return grads_.data(); }      // (layout().size())
  // The 16-bit paths' copies of the parameters, which their kernels read ((layout().size()) of the
  // storage type; null on fp32). The optimizer step writes them with the masters (AdamW::step);
  // whoever else writes params() remakes them with params_written(). Until then they are NaN, so
  // that a missing call shows in the first loss.
  kernels::Tensor param_copies();
  void params_written();                  // all of params()
  void params_written(FloatRange range);  // the floats in range
  void zero_grads();

  void forward(int slot, const int32_t* host_tokens /* (rows, T) */, kernels::ConstTensor input /* (rows, T, C) */,
               int rows = 0 /* 0: B */);
  // Where a non-first stage's input for `slot` lives: receive into it and pass it to forward(),
  // which then uses it in place.
  kernels::Tensor input_buffer(int slot) { return slot_tensor(slot, acts_.input); }  // (B, T, C)
  kernels::Tensor output(int slot);  // (B, T, C): the last layer's residual stream

  // Last stage only. Adds the sum over the slot's samples of each sample's mean token loss to the
  // device's loss sum; grad_scale != 0 leaves for backward(slot) dlogits, grad_scale times the
  // gradient of that sum (the loss scale, lib/model/loss_scale.hpp; 1 without one), and 0 none
  // (evaluation). counted_rows >= 0 adds only the first counted_rows samples (validation pads a
  // pipeline's last micro-batch after them).
  void loss(int slot, const int32_t* host_targets /* (B, T) */, float grad_scale, int counted_rows = -1);
  // The loss sum since the last call (waits for the stream), and resets it to zero.
  double take_loss_sum();
  // (B, T, Vp) after loss(.., 0), where the head ran in one chunk (head_samples(config, B) == B:
  // models whose vocabulary is small beside a layer, as the tests' are).
  kernels::ConstTensor logits() const {
    assert(head_samples_ == B_);
    return {logits_.data(), storage_};
  }
  // Samples per chunk of the head at micro-batch B: the most whose logits (s T Vp) are no larger
  // than one layer's activations (B T, times LayerWidths::kept), at least 1.
  static int head_samples(const ModelConfig& config, int B);

  // on_unit_done(u), when given, is called as soon as the gradients of model unit u (see
  // lib/plan/grad_blocks.hpp) and of wte (on the head: before unit L+1; on the embedding: with
  // unit 0) are complete for this backward, so that their reduction can start early.
  // keep (a first stage's, lib/runtime/late_embedding_rows.hpp): the word embedding's gradient rows are
  // copied there, with their token ids, instead of being added into dwte.
  void backward(int slot, kernels::ConstTensor doutput /* (B, T, C) */,
                const std::function<void(int unit)>& on_unit_done = {}, KeptEmbeddingRows keep = {});
  kernels::ConstTensor input_grad() const { return {dresidual_.data(), storage_}; }  // (rows, T, C) of the last backward

  // Bytes a stage allocates besides parameters, gradients and optimizer state, for memory
  // models: its activations per slot, and its scratch shared by all slots (logits and the
  // recomputed activations included). `attention` is what its backend runs at T
  // (Backend::attention_path), which sets what each layer keeps for attention backward;
  // `storage` its element type (Backend::storage).
  struct ActivationFootprint {
    size_t per_slot;  // bytes
    size_t scratch;   // bytes
  };
  static ActivationFootprint activation_footprint(const ModelConfig& config, LayerRange layers, int B, int T,
                                                  kernels::AttentionPath attention, kernels::ElementType storage,
                                                  Recompute recompute = Recompute::none);

 private:
  // One layer's activations, in this order; the first six are the attention half. Widths as
  // lib/model/model_tensors.hpp's LayerWidths; RMSNorm keeps no mean (0 elements).
  enum Act : int {
    ln1, ln1_mean, ln1_rstd,  // (B, T, C), (B, T), (B, T)
    qkv,                      // (B, T, QKV), q and k turned where positions are rotary
    att_saved,                // attention's saved state: lse (B, NH, T) or probabilities (B, NH, T, T)
    atty,                     // (B, T, NH hs)
    res2,                     // (B, T, C)
    ln2, ln2_mean, ln2_rstd,  // (B, T, C), (B, T), (B, T)
    fch, fch_act,             // (B, T, F), (B, T, FA): 4C each (GELU), or 2 FC and FC (SwiGLU)
    res3,                     // (B, T, C)
    kActs
  };
  using LayerActs = std::array<kernels::Tensor, kActs>;  // one layer's, for one slot

  // Where a tensor lives: in its slot or in the shared recomputation set, at byte offset +
  // i * stride for the stage's local layer i, and its element type (the statistics are fp32).
  struct Place {
    bool shared;
    size_t offset, stride;  // bytes
    kernels::ElementType type;
  };
  struct ActLayout {
    std::array<Place, kActs> layer;
    Place lnf, lnf_mean, lnf_rstd;  // last stage: (B, T, C), (B, T) (layernorm only), (B, T)
    Place input;                    // in the slot (B, T, C): the stage input (encoded on the first stage)
    Place output;                   // in the slot (B, T, C), full only: the last layer's res3
    size_t slot_size, shared_size;  // bytes
  };
  static ActLayout act_layout(const ModelConfig& config, LayerRange layers, int B, int T,
                              kernels::AttentionPath attention, kernels::ElementType storage, Recompute recompute);

  kernels::Tensor slot_tensor(int slot, Place place, int local_layer = 0);
  kernels::Tensor at(int slot, Place place, int local_layer = 0);
  LayerActs layer_acts(int slot, int local_layer);
  kernels::ConstTensor layer_input(int slot, int local_layer);
  // A (B, T, width) scratch buffer of the storage type.
  kernels::Tensor scratch(kernels::DeviceBuffer<std::byte>& buffer) { return {buffer.data(), storage_}; }
  // A norm's output and statistics among a layer's activations; the final norm's of a slot.
  static NormOutput norm_output(const LayerActs& a, Act out, Act mean, Act rstd);
  NormOutput final_norm(int slot);
  bool learned_positions() const { return config_.positions == PositionKind::learned; }
  // The forward of the slot's layers (and final norm), from its input on; and of one layer's
  // attention half, which selective backward recomputes: ln1 from the layer's input, then qkv,
  // its rotation and attention from ln1.
  void layers_forward(int slot);
  void ln1_forward(int slot, int local_layer);
  void attention_forward(int slot, int local_layer);

  ModelConfig config_;
  ParamLayout layout_;
  int B_, T_;
  [[maybe_unused]] int slots_;  // checked by assertions only
  std::vector<int> rows_;  // per slot: samples of its current micro-batch (<= B_)
  kernels::Backend& backend_;
  kernels::ElementType storage_;
  Recompute recompute_;
  int head_samples_;  // head_samples(config_, B_)
  ActLayout acts_;
  int shared_holds_ = -1;  // full: the slot whose forward the shared set holds; -1 none

  // What the kernels read as parameters: the 16-bit copies on the 16-bit paths, else the masters.
  kernels::ConstTensor weights() const;

  kernels::DeviceBuffer<float> params_, grads_;
  kernels::DeviceBuffer<uint16_t> param_copies_;  // (layout().size()) of the storage type, 16-bit paths only
  kernels::DeviceBuffer<std::byte> activations_;  // (slots, slot_size)
  kernels::DeviceBuffer<std::byte> shared_;       // (shared_size): recomputed activations
  kernels::DeviceBuffer<int32_t> tokens_;       // (slots, B, T) first stage, for encoder backward
  kernels::DeviceBuffer<int32_t> targets_;      // (B, T) last stage
  kernels::DeviceBuffer<std::byte> logits_;     // (head_samples_, T, Vp) last stage; becomes dlogits
  kernels::DeviceBuffer<float> sample_losses_;  // (B)
  kernels::DeviceBuffer<double> loss_sum_;      // (1) last stage

  // Pinned upload buffers, and per buffer the event after its last upload.
  kernels::DeviceBuffer<int32_t> tokens_upload_;   // (slots, B, T) first stage
  kernels::DeviceBuffer<int32_t> targets_upload_;  // (B, T) last stage
  std::vector<kernels::Event> tokens_uploaded_;    // (slots)
  kernels::Event targets_uploaded_;

  // Scratch, shared by all slots, of the storage type: forward branch outputs and backward
  // activation gradients.
  kernels::DeviceBuffer<std::byte> branch_;     // (B, T, C)
  kernels::DeviceBuffer<std::byte> dresidual_;  // (B, T, C) running gradient of the residual stream
  kernels::DeviceBuffer<std::byte> dbtc_;       // (B, T, max(C, NH hs))
  kernels::DeviceBuffer<std::byte> dqkv_;       // (B, T, QKV)
  kernels::DeviceBuffer<std::byte> dfch_;       // (B, T, F)
  kernels::DeviceBuffer<std::byte> dfch_act_;   // (B, T, FA) SwiGLU only
  kernels::DeviceBuffer<float> inv_freq_;       // (hs / 2) rotary positions only: their inverse frequencies
};

}  // namespace eth

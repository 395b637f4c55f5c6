// ETH's one memory model: the device memory of one rank's role in a plan, by what holds it.
// The runtime's figure (eth_train refuses a plan that does not fit and reports it beside the
// allocator's peak as planned_bytes) and the planner's (lib/planner/cost_model.hpp, which
// leaves out the transfer buffers: docs/planner.md says why) both come from here.
//
// Pure arithmetic on the model, the plan and the stage's layout: parameters and activations
// as ParamLayout and Stage::activation_footprint lay them out (tests check that a stage
// allocates exactly that), in the bytes of the path's storage type (kernels/tensor.hpp): fp32
// masters, gradients and moments on every path; activations, scratch and transfers of the
// storage type; the backend's workspace (kernels/workspace.hpp): on the bf16 path the working
// copies its ops compute on, on a GPU (or its interpreter) the launch workspace.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/attention_path.hpp"
#include "kernels/tensor.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/stage.hpp"
#include "lib/model/recompute.hpp"
#include "lib/plan/plan.hpp"

namespace eth {

// One rank's memory by what holds it, in bytes (integers, exact in a double).
struct MemoryBytes {
  double parameters = 0;   // fp32 weights of the stage, and on the bf16 path their bf16 copies
  double gradients = 0;    // their fp32 gradients
  double optimizer = 0;    // AdamW's two moments (of this rank's shards only where sharded), its segment table
  double activations = 0;  // what the in-flight micro-batches keep for backward, token ids included
  double workspace = 0;    // one micro-batch's scratch: the recomputed set, the head's logits, the backend's
                           // workspace (kernels/workspace.hpp: bf16 working copies, GPU launch workspace)
  double transfers = 0;    // the gradient received from the next stage, one per slot in flight back, late rows
  double total() const { return parameters + gradients + optimizer + activations + workspace + transfers; }
};


// How a job runs, as far as a rank's memory goes.
struct JobMemoryOptions {
  kernels::AttentionPath attention = kernels::AttentionPath::blocked;  // Backend::attention_path at T
  kernels::ElementType storage = kernels::ElementType::f32;            // Backend::storage
  bool shard_all = false;  // --shard-optimizer: moments sharded in every block of several owners
  // Block gradient sums (--grad-sync block): where the plan's tied sum starts early, its members
  // keep and gather embedding rows (lib/runtime/late_embedding_rows.hpp).
  bool block_sync = true;
  // What the backend's GEMMs multiply in (Backend::arithmetic): on the bf16 path, bf16 on the
  // bf16 kernels (working copies for their fallbacks only), fp32 on the twin (its fp32 operands).
  kernels::Arithmetic arithmetic = kernels::Arithmetic::fp32;
  // Where the ops run (Backend::ops_device): the GPU ops hold a launch workspace.
  kernels::OpsDevice device = kernels::OpsDevice::host;
};

// A stage holding `layers` on a rank with b samples per micro-batch of T tokens, `slots`
// micro-batches in flight (activation_slots), activations kept as `recompute` says, attention
// backward state and storage as `options` says. Moments unsharded, no late embedding rows.
MemoryBytes stage_memory(const ModelConfig& model, LayerRange layers, int b, int T, int slots, Recompute recompute,
                         const JobMemoryOptions& options);
// The same from the stage's activation footprint already in hand (Stage::activation_footprint of
// these layers, b, T, attention path, storage and recomputation): for a caller that asks about
// the same stage shapes many times (the planner's cost model keeps the footprints it has computed).
MemoryBytes stage_memory(const ModelConfig& model, LayerRange layers, int b, int T, int slots,
                         const Stage::ActivationFootprint& acts, const JobMemoryOptions& options);

// AdamW's bytes on world_rank (not idle) under plan: its two moments, of its shards only where
// sharded (sharded_block_flags(plan, ..., shard_all)), and its segment table.
double rank_optimizer_bytes(const ModelConfig& model, const Plan& plan, int world_rank, bool shard_all);

// `role` (not idle) of `world_rank` in `plan` at seq_len: its stage's memory, with the moments
// of its shards only in the plan's sharded blocks (and every block of several owners under
// shard_all), and the late embedding rows where the plan keeps them.
MemoryBytes rank_memory(const ModelConfig& model, const Plan& plan, const RankRole& role, int world_rank, int seq_len,
                        const JobMemoryOptions& options);

// rank_memory's total for each of the `world_size` ranks of `plan`, 0 for an idle one: what
// eth_train checks against each device and reports as planned_bytes.
std::vector<size_t> plan_device_bytes(const ModelConfig& model, const Plan& plan, int world_size, int seq_len,
                                      const JobMemoryOptions& options);

}  // namespace eth

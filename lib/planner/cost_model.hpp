// The planner's cost model (docs/planner.md has the formulas): per-rank compute of a stage from
// the profiles, memory per rank (parameters, gradients, AdamW moments, the activations of the
// micro-batches in flight under 1F1B, scratch), point-to-point transfers from the topology's
// links, hierarchical block reductions, the optimizer, and the analytic iteration time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/model/model_config.hpp"
#include "lib/model/model_tensors.hpp"
#include "lib/plan/memory_model.hpp"
#include "lib/plan/plan.hpp"
#include "lib/plan/topology.hpp"
#include "lib/planner/profile.hpp"

namespace eth::planner {

// Forward and backward of one micro-batch (or a rank's share of it) on one rank.
struct ComputeMs {
  double forward = 0;
  double backward = 0;
  double total() const { return forward + backward; }
};

// What the analytic model predicts for a plan.
struct Estimate {
  double iteration_ms = 0;
  std::vector<double> pipeline_ms;   // (m - 1) max stage + sum of stages + transfers
  double reduction_ms = 0;           // block reductions not hidden behind backward
  double optimizer_ms = 0;           // slowest rank's AdamW
  std::vector<double> memory_gb;     // per rank: memory[r].total() in GB
  std::vector<MemoryBytes> memory;   // per rank (zero for an idle one): lib/plan/memory_model.hpp
};

class CostModel {
 public:
  // `profiles` are indexed like topology.device_types (see profiles_for).
  CostModel(const Topology& topology, const ModelConfig& model, int seq_len, std::vector<Profile> profiles);

  const Topology& topology() const { return topology_; }
  const ModelConfig& model() const { return model_; }
  int seq_len() const { return seq_len_; }
  const Profile& profile(int type) const { return profiles_[type]; }

  // One rank of device type `type` computing b samples of a stage holding `layers`.
  ComputeMs compute(int type, LayerRange layers, int b) const { return compute(profiles_[type].at(b), layers); }
  // The same from the profile's entry at that micro-batch size.
  ComputeMs compute(const ProfileEntry& costs, LayerRange layers) const;
  // Parameters (floats) of a stage holding `layers` (lib/model/model_tensors.hpp).
  double param_floats(LayerRange layers) const { return double(stage_params(model_, layers)); }
  // What one rank needs (stage_memory, lib/plan/memory_model.hpp, under the CPU backend's
  // attention rule: attention_memory.hpp): 16 bytes per parameter (fp32 weights, gradients, two
  // AdamW moments) plus `slots` micro-batches of b samples of activations, as `recompute` keeps
  // them, and the stage's scratch (the recomputed set included), in the bytes of the profiles'
  // precision's storage type; not the transfer buffers.
  // Moments unsharded; estimate() shards them.
  MemoryBytes memory(LayerRange layers, int b, int slots, Recompute recompute = Recompute::none) const;
  double memory_bytes(LayerRange layers, int b, int slots, Recompute recompute = Recompute::none) const {
    return memory(layers, b, slots, recompute).total();
  }
  // The forward work a backward repeats per micro-batch under `recompute`, at a stage with
  // `slots` micro-batches in flight (full with one: the shared set still holds it, nothing).
  double recompute_ms(const ProfileEntry& costs, LayerRange layers, Recompute recompute, int slots) const;
  // The attention half's share of a layer's forward (ln1, the qkv matmul, causal attention),
  // by FLOPs: profiles time whole layers only.
  double attention_share() const;
  // With every block sharded (eth_train --shard-optimizer) beside a plan's sharded_blocks:
  // the estimate and the simulator count each rank's moments and updates of its shards only
  // (lib/plan/optimizer_shards.hpp) and the sharded blocks' collectives.
  void set_shard_optimizer(bool shard) { shard_optimizer_ = shard; }
  bool shard_optimizer() const { return shard_optimizer_; }
  // Whether a search may shard blocks' optimizer state (choose_sharding); on by default.
  void set_allow_sharding(bool allow) { allow_sharding_ = allow; }
  bool allow_sharding() const { return allow_sharding_; }
  // Whether a search may recompute activations where a stage does not fit otherwise
  // (eth_plan --memory-savers); on by default.
  void set_allow_recompute(bool allow) { allow_recompute_ = allow; }
  bool allow_recompute() const { return allow_recompute_; }
  // The least recomputation (none, then selective, then full; none only unless allowed) under
  // which b samples of a stage holding `layers`, with `slots` micro-batches in flight, fit a
  // device of type `type`; nothing when even full recomputation does not fit.
  // `sharded_bytes`: optimizer state the rank does not keep (other owners' shards).
  std::optional<Recompute> lightest_recompute(int type, LayerRange layers, int b, int slots,
                                              double sharded_bytes = 0) const;
  double device_bytes(int type) const { return topology_.device_types[type].memory_gb * 1e9; }

  // Sending `bytes` from one rank to another over the link between them.
  double p2p_ms(int from, int to, double bytes) const;
  double host_copy_ms(int node, double bytes) const;  // a GPU rank's staging copy of `bytes`
  // One micro-batch's activations (or their gradients) from stage `from` to stage `to`:
  // each sender ships its samples to the ranks holding them next, the slowest sender counts.
  double boundary_ms(const PlanStage& from, const PlanStage& to, int micro_batch) const;
  // Hierarchical all-reduce of `bytes` among `owners`: node-local reduce to a leader, ring
  // all-reduce among leaders over the network, node-local broadcast.
  double allreduce_ms(const std::vector<int>& owners, double bytes) const;
  // One flat collective of a sharded block (lib/plan/optimizer_shards.hpp) among `owners`: the sum
  // delivered to each shard's owner, or the all-gather of the updated shards; both move
  // (k - 1)/k of `bytes` through every owner, over the network (each node's NIC carrying all of
  // its owners' traffic) when they span nodes.
  double sharded_collective_ms(const std::vector<int>& owners, double bytes) const;
  double optimizer_ms(int type, double params) const;
  // AdamW of `rank` (not idle) under `plan`: the floats it updates, its shards only where sharded.
  double rank_optimizer_ms(const Plan& plan, int rank, LayerRange layers) const;

  // The analytic model of a whole (valid) plan.
  Estimate estimate(const Plan& plan) const;

 private:
  const Stage::ActivationFootprint& footprint(LayerRange layers, int b, Recompute recompute) const;

  const Topology& topology_;
  ModelConfig model_;
  int seq_len_;
  // What activations and transfers are stored in: the profiles' paths' storage (every device of
  // a job stores one width: 16 bits, bf16 or fp16, or fp32 throughout).
  kernels::ElementType storage_;
  std::vector<Profile> profiles_;
  bool shard_optimizer_ = false;
  bool allow_recompute_ = true;
  bool allow_sharding_ = true;
  // Stage::activation_footprint by stage shape (footprint(): layer count, ends the model,
  // recomputation), then by samples per micro-batch. The planner is single-threaded.
  mutable std::vector<std::vector<std::optional<Stage::ActivationFootprint>>> footprints_;
};

// A rank's compute per micro-batch in stage s of a pipeline (its split share of the samples),
// the stage's recomputation charged to its backward.
ComputeMs rank_compute(const CostModel& cost, const PlanPipeline& pipe, int stage, int index_in_stage);

// Hierarchical all-reduce of the gradient blocks of a plan: one entry per collective (every
// block, then the tied embedding, then, where the runtime sums it early, the gather of its late
// rows), with its owners and duration; a sharded block's sum goes to its shards' owners, and
// its all-gather follows the optimizer.
struct Reduction {
  // Units as in lib/plan/grad_blocks.hpp; the tied wte's sum: kTiedSum; the gather of its late rows
  // (lib/runtime/late_embedding_rows.hpp, where the runtime sums wte early): kTiedGather.
  static constexpr int kTiedSum = -1, kTiedGather = -2;
  int unit_begin = 0, unit_end = 0;
  std::vector<int> owners;
  double ms = 0;
  double gather_ms = 0;  // a sharded block: the all-gather of its updated shards after AdamW
};
std::vector<Reduction> plan_reductions(const CostModel& cost, const Plan& plan);

}  // namespace eth::planner

#include "lib/plan/memory_model.hpp"

#include "lib/plan/optimizer_shards.hpp"
#include "lib/plan/schedule.hpp"

namespace eth {

size_t stage_param_floats(const GptConfig& model, LayerRange layers) {
  const size_t C = static_cast<size_t>(model.channels), Vp = static_cast<size_t>(model.padded_vocab_size);
  const size_t maxT = static_cast<size_t>(model.max_seq_len);
  const bool first = layers.begin == 0, last = layers.end == model.num_layers;
  size_t n = static_cast<size_t>(layers.count()) * (12 * C * C + 13 * C);  // per layer: attention and MLP
  if (first) n += (Vp + maxT) * C;                                          // wte, wpe
  if (last) n += 2 * C + (first ? 0 : Vp * C);                              // final layernorm, the head's wte copy
  return n;
}

MemoryBytes stage_memory(const GptConfig& model, LayerRange layers, int b, int T, int slots, Recompute recompute,
                         kernels::AttentionPath attention) {
  return stage_memory(model, layers, b, T, slots, Stage::activation_footprint(model, layers, b, T, attention, recompute));
}

MemoryBytes stage_memory(const GptConfig& model, LayerRange layers, int b, int T, int slots,
                         const Stage::ActivationFootprint& acts) {
  const double params = 4.0 * double(stage_param_floats(model, layers));
  const double BT = double(b) * T;
  const bool first = layers.begin == 0, last = layers.end == model.num_layers;
  const double tokens = (first ? BT * slots : 0) + (last ? BT : 0);  // int32 token ids (per slot) and targets
  const double rows = BT * model.channels;                           // one micro-batch's activations
  return {params,
          params,
          2 * params,
          4 * (double(acts.per_slot) * slots + tokens),
          4 * double(acts.scratch),
          4 * rows * (slots + 1)};
}

MemoryBytes rank_memory(const GptConfig& model, const Plan& plan, const RankRole& role, int world_rank, int seq_len,
                        bool shard_all, kernels::AttentionPath attention) {
  const PlanPipeline& pipe = plan.pipelines[role.pipeline];
  const PlanStage& stage = pipe.stages[role.stage];
  const int slots = activation_slots(role.stage, static_cast<int>(pipe.stages.size()), pipe.micro_batches);
  MemoryBytes bytes = stage_memory(model, stage.layers, role.samples, seq_len, slots, stage.recompute, attention);
  bytes.optimizer = 8.0 * double(moment_floats(model, plan, world_rank, shard_all));
  return bytes;
}

std::vector<size_t> plan_device_bytes(const GptConfig& model, const Plan& plan, int world_size, int seq_len,
                                      bool shard_all, kernels::AttentionPath attention) {
  std::vector<size_t> bytes;
  const std::vector<RankRole> roles = rank_roles(plan, world_size);
  for (int r = 0; r < world_size; r++) {
    const RankRole& role = roles[static_cast<size_t>(r)];
    bytes.push_back(role.idle() ? 0 : static_cast<size_t>(rank_memory(model, plan, role, r, seq_len, shard_all, attention).total()));
  }
  return bytes;
}

}  // namespace eth

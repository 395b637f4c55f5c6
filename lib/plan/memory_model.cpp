#include "lib/plan/memory_model.hpp"

#include "kernels/adamw_segments.hpp"
#include "kernels/twin_backend.hpp"
#include "kernels/gpu_ops/scratch.hpp"
#include "kernels/workspace.hpp"

#include "lib/model/model_tensors.hpp"
#include "lib/plan/grad_blocks.hpp"
#include "lib/plan/optimizer_shards.hpp"
#include "lib/plan/schedule.hpp"

namespace eth {

MemoryBytes stage_memory(const ModelConfig& model, LayerRange layers, int b, int T, int slots, Recompute recompute,
                         const JobMemoryOptions& options) {
  return stage_memory(model, layers, b, T, slots,
                      Stage::activation_footprint(model, layers, b, T, options.attention, options.storage, recompute),
                      options);
}

namespace {

// The segments of AdamW's table over all of a stage (lib/model/optimizer.hpp: adamw_segments),
// counted from the model's tensor list (lib/model/model_tensors.hpp: block_counts).
size_t stage_adamw_segments(const ModelConfig& model, LayerRange layers) {
  const BlockCounts b = block_counts(model);
  const bool first = layers.begin == 0, last = layers.end == model.num_layers;
  size_t n = static_cast<size_t>(layers.count()) * b.layer_segments;
  if (first) n += b.embedding_segments;
  if (last) n += b.final_norm_segments + (model.tied_head && first ? 0 : b.head_segments);
  return n;
}

// The backend's workspace (kernels/workspace.hpp), with `gathered_rows` rows of late embedding
// rows added by an embedding backward: the bf16 path's working copies and the GPU ops' launch
// workspace, as Backend::reserve_workspace holds them.
double backend_workspace_bytes(const ModelConfig& model, LayerRange layers, int b, int T, size_t gathered_rows,
                               const JobMemoryOptions& options) {
  const kernels::StageShape shape = stage_shape(model, layers, b, T, gathered_rows);
  const size_t copies =
      options.storage == kernels::ElementType::f32 ? 0 : kernels::twin_workspace_bytes(shape, options.arithmetic);
  return double(copies + kernels::gpu_ops::launch_workspace_bytes(shape, options.device));
}

}  // namespace

MemoryBytes stage_memory(const ModelConfig& model, LayerRange layers, int b, int T, int slots,
                         const Stage::ActivationFootprint& acts, const JobMemoryOptions& options) {
  const double floats = double(stage_params(model, layers));
  const double params = 4.0 * floats;
  // On the 16-bit paths the kernels read 16-bit copies of the parameters, kept beside the masters.
  const double copies = options.storage != kernels::ElementType::f32 ? 2.0 * floats : 0.0;
  const double table = double(sizeof(kernels::AdamWSegment) * stage_adamw_segments(model, layers));
  const double BT = double(b) * T;
  const bool first = layers.begin == 0, last = layers.end == model.num_layers;
  const double tokens = (first ? BT * slots : 0) + (last ? BT : 0);  // int32 token ids (per slot) and targets
  const double rows = BT * model.channels;                           // one micro-batch's activations
  return {params + copies,
          params,
          2 * params + table,
          double(acts.per_slot) * slots + 4 * tokens,
          double(acts.scratch) + backend_workspace_bytes(model, layers, b, T, 0, options),
          double(kernels::element_bytes(options.storage)) * rows * (slots + 1)};
}

double rank_optimizer_bytes(const ModelConfig& model, const Plan& plan, int world_rank, bool shard_all) {
  const size_t segments = adamw_segment_count(model, plan, world_rank, shard_all);
  return 8.0 * double(moment_floats(model, plan, world_rank, shard_all)) +
         double(sizeof(kernels::AdamWSegment) * segments);
}

MemoryBytes rank_memory(const ModelConfig& model, const Plan& plan, const RankRole& role, int world_rank, int seq_len,
                        const JobMemoryOptions& options) {
  const PlanPipeline& pipe = plan.pipelines[role.pipeline];
  const PlanStage& stage = pipe.stages[role.stage];
  const int slots = activation_slots(role.stage, static_cast<int>(pipe.stages.size()), pipe.micro_batches);
  MemoryBytes bytes = stage_memory(model, stage.layers, role.samples, seq_len, slots, stage.recompute, options);
  bytes.optimizer = rank_optimizer_bytes(model, plan, world_rank, options.shard_all);
  // The tied group's late embedding rows: a first stage's own, with their ids, and every
  // member's gathered ones (rows of the storage type, ids int32), and the workspace of their
  // embedding backward (the bf16 path's widening, the GPU's sort).
  const bool first = stage.layers.begin == 0, last = stage.layers.end == model.num_layers;
  if (options.block_sync && (first || last) && tied_sum_starts_early(plan, model, seq_len)) {
    const double mine = first ? double(role.samples) * seq_len : 0, all = tied_rows_kept_late(plan, seq_len);
    bytes.transfers += (mine + all) * (double(kernels::element_bytes(options.storage)) * model.channels + 4);
    bytes.workspace +=
        backend_workspace_bytes(model, stage.layers, role.samples, seq_len, static_cast<size_t>(all), options) -
        backend_workspace_bytes(model, stage.layers, role.samples, seq_len, 0, options);
  }
  return bytes;
}

std::vector<size_t> plan_device_bytes(const ModelConfig& model, const Plan& plan, int world_size, int seq_len,
                                      const JobMemoryOptions& options) {
  std::vector<size_t> bytes;
  const std::vector<RankRole> roles = rank_roles(plan, world_size);
  for (int r = 0; r < world_size; r++) {
    const RankRole& role = roles[static_cast<size_t>(r)];
    bytes.push_back(role.idle() ? 0 : static_cast<size_t>(rank_memory(model, plan, role, r, seq_len, options).total()));
  }
  return bytes;
}

}  // namespace eth

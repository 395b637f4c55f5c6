#include "lib/runtime/make_rank_runtime.hpp"

#include "lib/runtime/idle_rank.hpp"
#include "lib/runtime/pipeline_runtime.hpp"

namespace eth {

std::unique_ptr<RankRuntime> make_rank_runtime(const ModelConfig& model, const Plan& plan, const ParallelContext& ctx,
                                               int seq_len, GradSyncMode sync, const AdamWConfig& adamw,
                                               kernels::Backend& backend, CommChoice comm, uint64_t seed,
                                               const StageState* carried) {
  if (ctx.role.idle()) return std::make_unique<IdleRank>(model, plan, ctx, comm.reducer->path());
  return std::make_unique<PipelineRuntime>(model, plan, ctx, seq_len, sync, adamw, backend, std::move(comm), seed,
                                           carried);
}

int stream_communicators(const ParallelContext& ctx) {
  if (ctx.role.idle()) return 0;
  int groups = 0;
  for (const ProcessGroup& g : ctx.block_groups) groups += g.is_member() && g.size() > 1;
  groups += ctx.tied.is_member() && ctx.tied.size() > 1;
  groups += ctx.flat.is_member() && ctx.flat.size() > 1;
  const int lanes = 2 * !ctx.first_stage() + 2 * !ctx.last_stage();
  return 2 * groups + lanes;
}

}  // namespace eth

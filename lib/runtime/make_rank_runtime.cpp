#include "lib/runtime/make_rank_runtime.hpp"

#include "lib/runtime/idle_rank.hpp"
#include "lib/runtime/pipeline_runtime.hpp"

namespace eth {

std::unique_ptr<RankRuntime> make_rank_runtime(const GptConfig& model, const Plan& plan, const ParallelContext& ctx,
                                               int seq_len, GradSyncMode sync, const AdamWConfig& adamw,
                                               kernels::Backend& backend, CommChoice comm, uint64_t seed,
                                               const StageState* carried) {
  if (ctx.role.idle()) return std::make_unique<IdleRank>(model, plan, ctx, comm.reducer->path());
  return std::make_unique<PipelineRuntime>(model, plan, ctx, seq_len, sync, adamw, backend, std::move(comm), seed,
                                           carried);
}

}  // namespace eth

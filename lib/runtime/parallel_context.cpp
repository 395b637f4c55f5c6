#include "lib/runtime/parallel_context.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

#include "mpi_topology/mpi_session.hpp"

namespace eth {
namespace {

std::vector<int> sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Each rank's samples of one micro-batch (the last one when `last`), in the stage's rank order.
std::vector<int> rows_of(const PlanPipeline& pipe, const PlanStage& stage, bool last) {
  if (stage.split.empty()) return {last ? pipe.last_micro_batch : pipe.micro_batch};
  return last ? stage.last_split : stage.split;
}

ParallelContext::Exchanges neighbour_exchanges(const PlanPipeline& pipe, int s, bool last) {
  ParallelContext::Exchanges x;
  const PlanStage& mine = pipe.stages[s];
  if (s > 0) {
    const PlanStage& prev = pipe.stages[s - 1];
    x.from_previous = RowExchange(prev.ranks, rows_of(pipe, prev, last), mine.ranks, rows_of(pipe, mine, last));
    x.grads_to_previous = RowExchange(mine.ranks, rows_of(pipe, mine, last), prev.ranks, rows_of(pipe, prev, last));
  }
  if (s + 1 < static_cast<int>(pipe.stages.size())) {
    const PlanStage& next = pipe.stages[s + 1];
    x.to_next = RowExchange(mine.ranks, rows_of(pipe, mine, last), next.ranks, rows_of(pipe, next, last));
    x.grads_from_next = RowExchange(next.ranks, rows_of(pipe, next, last), mine.ranks, rows_of(pipe, mine, last));
  }
  return x;
}

}  // namespace

ParallelContext build_parallel_context(const Topology& topology, const Plan& plan, const ModelConfig& model,
                                       const PrecisionPaths& precision) {
  ParallelContext ctx;
  MPI_CHECK(MPI_Comm_rank(world_comm(), &ctx.world_rank));
  MPI_CHECK(MPI_Comm_size(world_comm(), &ctx.world_size));
  assert(topology.world_size() == ctx.world_size);  // load_job checked the job (lib/job/job_rules.hpp)

  const std::vector<RankRole> roles = rank_roles(plan, ctx.world_size);
  ctx.role = roles[ctx.world_rank];
  ctx.stages = ctx.role.idle() ? 0 : static_cast<int>(plan.pipelines[ctx.role.pipeline].stages.size());
  for (const RankPlace& place : topology.ranks) ctx.node_of_rank.push_back(place.node);
  for (int r = 0; r < ctx.world_size; r++) ctx.storage_of_rank.push_back(precision.of_rank(topology, r).storage());

  int tag = 0;
  auto create = [&](const std::vector<int>& members) { return ProcessGroup::create(sorted(members), ctx.node_of_rank, tag++); };
  ctx.blocks = derive_grad_blocks(plan, model.num_layers);
  for (const GradBlock& b : ctx.blocks) ctx.block_groups.push_back(create(b.owners));
  // An untied model's wte and head are reduced with units 0 and L + 1: no tied group.
  ctx.tied = create(model.tied_head ? tied_embedding_group(plan) : std::vector<int>{});
  // The flat baseline (FlatGradSync, lib/runtime/grad_sync_modes.hpp) ignores nodes: one plain
  // all-reduce over everyone.
  std::vector<int> training;
  for (const GradBlock& b : ctx.blocks) training.insert(training.end(), b.owners.begin(), b.owners.end());
  std::sort(training.begin(), training.end());
  training.erase(std::unique(training.begin(), training.end()), training.end());
  ctx.flat = ProcessGroup::create(training, std::vector<int>(ctx.node_of_rank.size(), 0), tag++);
  return with_batch_split(std::move(ctx), plan);
}

ParallelContext with_batch_split(ParallelContext ctx, const Plan& plan) {
  ctx.role = rank_roles(plan, ctx.world_size)[ctx.world_rank];
  ctx.full = ctx.last = {};
  if (ctx.role.idle()) return ctx;  // no neighbours
  const PlanPipeline& pipe = plan.pipelines[ctx.role.pipeline];
  ctx.full = neighbour_exchanges(pipe, ctx.role.stage, false);
  if (pipe.short_last()) ctx.last = neighbour_exchanges(pipe, ctx.role.stage, true);
  return ctx;
}

}  // namespace eth

#include "lib/rank_runtime.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "lib/fault_injection.hpp"
#include "lib/pipeline_runtime.hpp"
#include "mpi_topology/host_messages.hpp"

namespace eth {
namespace {

// A rank the plan leaves idle: no layers, no data; it adds zeros to the step's loss and norm,
// creates checkpoints with the others and writes nothing into them.
class IdleRank final : public RankRuntime {
 public:
  IdleRank(const GptConfig& model, const Plan& plan, const ParallelContext& ctx)
      : model_(model), plan_(plan), whole_(model, {0, model.num_layers}),
        owners_(tensor_owners(model, plan, ctx.world_size)), rank_(ctx.world_rank) {}

  StepResult step(int step, SampleStream&, float, StepTrace& trace) override {
    trace.begin_step();
    // An idle rank's phases of a step are one moment: where the others' step sum meets it.
    set_progress(step + 1, "reduction");
    for (FaultPhase phase : {FaultPhase::forward, FaultPhase::backward, FaultPhase::reduction}) fault_point(phase, step);
    double sums[2] = {0.0, 0.0};  // what the ranks with stages add up: loss, squared norm
    world_sum(sums, 2, kStepSums);
    trace.end_step();
    StepResult result;
    result.loss = sums[0] / plan_.global_batch;
    result.grad_norm = std::sqrt(sums[1]) / plan_.global_batch;
    result.applied = std::isfinite(result.loss) && std::isfinite(result.grad_norm);
    return result;
  }
  double evaluate(SampleStream&, int samples) override {
    double sum = 0.0;
    set_phase("evaluation");
    world_sum(&sum, 1, kValidationSum);
    return sum / samples;
  }
  void gather_parameters(float* full) override {
    gather_whole_model(whole_, owners_, rank_, [](const ParamTensor&, float*) {}, full);
  }
  void save_checkpoint(const std::string& path, const CheckpointHeader& header) override {
    CheckpointWriter writer(path, model_, header, MPI_COMM_WORLD);  // collective; owns no tensor
    fault_point(FaultPhase::checkpoint, header.step - 1);
    writer.finish();
  }
  CheckpointHeader load_checkpoint(const std::string& path) override { return CheckpointReader(path, model_).header(); }
  int collectives_per_step() const override { return 0; }
  std::string reduction_path() const override { return "idle"; }

 private:
  const GptConfig& model_;
  const Plan& plan_;
  ParamLayout whole_;
  std::vector<int> owners_;
  int rank_;
};

}  // namespace

std::unique_ptr<RankRuntime> make_rank_runtime(const GptConfig& model, const Plan& plan, const ParallelContext& ctx,
                                               int seq_len, GradSyncMode sync, const AdamWConfig& adamw,
                                               kernels::Backend& backend, std::unique_ptr<SumReducer> reducer,
                                               uint64_t seed, RankRuntime* previous) {
  if (ctx.role.idle()) return std::make_unique<IdleRank>(model, plan, ctx);
  return std::make_unique<PipelineRuntime>(model, plan, ctx, seq_len, sync, adamw, backend, std::move(reducer), seed,
                                           dynamic_cast<PipelineRuntime*>(previous));
}

std::vector<int> tensor_owners(const GptConfig& model, const Plan& plan, int world_size) {
  // The names of the tensors each rank holds; an idle rank holds none.
  std::vector<std::set<std::string>> held(static_cast<size_t>(world_size));
  const std::vector<RankRole> roles = rank_roles(plan, world_size);
  for (int r = 0; r < world_size; r++) {
    if (roles[r].idle()) continue;
    const ParamLayout layout(model, plan.pipelines[roles[r].pipeline].stages[roles[r].stage].layers);
    for (const ParamTensor& t : layout.tensors()) held[r].insert(t.name);
  }
  const ParamLayout whole(model, {0, model.num_layers});
  std::vector<int> owners;
  for (const ParamTensor& t : whole.tensors()) {
    int owner = 0;
    while (!held[owner].count(t.name)) owner++;
    owners.push_back(owner);
  }
  return owners;
}

void gather_whole_model(const ParamLayout& whole, const std::vector<int>& owners, int rank,
                        const std::function<void(const ParamTensor&, float*)>& read_mine, float* full) {
  std::vector<float> host;
  for (size_t i = 0; i < whole.tensors().size(); i++) {
    const ParamTensor& t = whole.tensors()[i];
    const int owner = owners[i], tag = static_cast<int>(i);
    if (owner == rank) {
      host.resize(t.size);
      read_mine(t, host.data());
      if (owner == 0) std::copy(host.begin(), host.end(), full + t.offset);
      else send_floats(host.data(), t.size, 0, tag, "send of " + t.name + " to rank 0");
    } else if (rank == 0) {
      recv_floats(full + t.offset, t.size, owner, tag, "receive of " + t.name + " for the whole model");
    }
  }
}

EvalShare evaluation_share(const Plan& plan, int pipeline, int samples) {
  int64_t before = 0;  // samples of the global batch that the pipelines before this one take
  for (int p = 0; p < pipeline; p++) before += plan.pipelines[p].samples();
  const int64_t mine = plan.pipelines[pipeline].samples();
  const int64_t first = samples * before / plan.global_batch, end = samples * (before + mine) / plan.global_batch;
  const int micro_batch = plan.pipelines[pipeline].micro_batch;
  EvalShare share;
  share.first = static_cast<uint64_t>(first);
  share.counted = static_cast<int>(end - first);
  share.micro_batches = (share.counted + micro_batch - 1) / micro_batch;
  return share;
}

}  // namespace eth

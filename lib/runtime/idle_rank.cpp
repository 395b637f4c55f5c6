#include "lib/runtime/idle_rank.hpp"

#include <cmath>

#include "lib/runtime/fault_injection.hpp"
#include "mpi_topology/host_messages.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth {

IdleRank::IdleRank(const ModelConfig& model, const Plan& plan, const ParallelContext& ctx, std::string training_path)
    : model_(model), plan_(plan), whole_(model, {0, model.num_layers}),
      owners_(tensor_owners(model, plan, ctx.world_size)), rank_(ctx.world_rank),
      training_path_(std::move(training_path)) {}

StepResult IdleRank::step(int step, SampleStream&, float, float loss_scale, StepTrace& trace) {
  trace.begin_step();
  // An idle rank's phases of a step are one moment: where the others' step sum meets it.
  set_progress(step + 1, "reduction");
  for (FaultPhase phase : {FaultPhase::forward, FaultPhase::backward, FaultPhase::reduction}) fault_point(phase, step);
  double sums[kStepSumCount] = {};  // what the ranks with stages add up
  world_sum(sums, kStepSumCount, kStepSums);
  trace.end_step();
  return agreed_step_result(sums, plan_.global_batch, loss_scale);
}

Evaluation IdleRank::evaluate(SampleStream&, int samples) {
  double sums[kValidationSumCount] = {};  // what the ranks with stages add up
  set_phase("evaluation");
  world_sum(sums, kValidationSumCount, kValidationSums);
  return {sums[0] / samples, sums[1]};
}

void IdleRank::gather_parameters(float* full) {
  gather_whole_model(whole_, owners_, rank_, [](const ParamTensor&, float*) {}, full);
}

void IdleRank::save_checkpoint(const std::string& path, const CheckpointHeader& header) {
  CheckpointWriter writer(path, model_, header, world_comm());  // collective; owns no tensor
  fault_point(FaultPhase::checkpoint, header.step - 1);
  writer.finish();
}

CheckpointHeader IdleRank::load_checkpoint(const std::string& path) { return CheckpointReader(path, model_).header(); }

}  // namespace eth

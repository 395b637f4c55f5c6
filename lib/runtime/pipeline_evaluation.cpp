// PipelineRuntime's evaluation (pipeline_runtime.hpp): forward only over the validation
// windows, the loss summed over every rank.
#include <algorithm>

#include "lib/runtime/pipeline_runtime.hpp"
#include "mpi_topology/host_messages.hpp"

namespace eth {

void PipelineRuntime::forward_only(int i, const int32_t* inputs, const int32_t* targets, int counted_rows) {
  // Evaluation is not timed: wait for the previous forward, which read slot 0's input.
  backend_.synchronize();
  if (!ctx_.first_stage()) transfers_.receive_evaluation(i);
  stage_.forward(0, inputs, ctx_.first_stage() ? nullptr : stage_.input_buffer(0));
  if (ctx_.last_stage()) {
    stage_.loss(0, targets, 0.0f, counted_rows);
  } else {
    transfers_.send_evaluation(i);
  }
}

Evaluation PipelineRuntime::evaluate(SampleStream& val, int samples) {
  set_phase("evaluation");
  const EvalShare share = evaluation_share(plan_, ctx_.role.pipeline, samples);
  for (int i = 0; i < share.micro_batches; i++) {
    const int offset = i * pipe_.micro_batch;  // within the pipeline's windows
    fetch(val, share.first + static_cast<uint64_t>(offset + ctx_.role.sample_offset), ctx_.role.samples, inputs_,
          targets_);
    // This rank's rows that are the pipeline's windows, not the last micro-batch's padding.
    const int counted = std::clamp(share.counted - offset - ctx_.role.sample_offset, 0, ctx_.role.samples);
    forward_only(i, inputs_.data(), targets_.data(), counted);
  }
  // The saturations of the evaluation's arrivals are its own: taken here, the next step's count
  // starts from zero.
  double sums[kValidationSumCount] = {ctx_.last_stage() ? stage_.take_loss_sum() : 0.0,
                                      static_cast<double>(transfers_.take_saturated())};
  world_sum(sums, kValidationSumCount, kValidationSums);
  return {sums[0] / samples, sums[1]};
}

}  // namespace eth

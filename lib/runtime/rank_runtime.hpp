// What every rank of a job does in it, whatever its role: the interface the training loop
// (lib/job/trainer.cpp) drives. A rank with a stage runs lib/runtime/pipeline_runtime.hpp; a rank the plan
// leaves idle (Plan::idle) holds no layers but takes part in every collective the others make:
// the per-step agreement on loss and norm, evaluation, checkpoints.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "lib/io/checkpoint.hpp"
#include "lib/io/step_trace.hpp"
#include "lib/io/token_data.hpp"
#include "lib/model/optimizer.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/runtime/grad_sync.hpp"
#include "lib/runtime/parallel_context.hpp"

namespace eth {

struct StepResult {
  double loss = 0;       // mean per-sample loss of the global batch (every rank)
  double grad_norm = 0;  // global norm of the mean gradient (unscaled), before clipping (every rank)
  bool applied = false;  // false when loss or norm was not finite: parameters unchanged
  std::string nonfinite;  // this rank's: the blocks it counts in the norm whose gradient is not finite
  // This rank's: its own gradients, before the sums, were not finite (checked where asked:
  // RankRuntime::check_own_gradients_next_step).
  bool own_overflow = false;
  // Activation values clamped to fp16's range on arrival at an fp16 stage from a bf16 one, over
  // the job (lib/runtime/stage_transfers.hpp); 0 where no stage boundary crosses formats.
  double saturated = 0;
};

// A step's world sums, in this order: loss, squared gradient norm, saturated activation values.
inline constexpr int kStepSumCount = 3;
// A step's outcome from its world sums of a batch of global_batch samples computed at
// `loss_scale` (lib/model/loss_scale.hpp): the same on every rank.
StepResult agreed_step_result(const double (&sums)[kStepSumCount], int global_batch, double loss_scale);

// An evaluation's outcome, the same on every rank.
struct Evaluation {
  double loss = 0;  // mean per-sample validation loss
  // Activation values clamped to fp16's range on arrival during the evaluation, counted as a
  // step's (StepResult::saturated) and charged to the evaluation, not to the step after it.
  double saturated = 0;
};
// An evaluation's world sums, in this order: loss, saturated activation values.
inline constexpr int kValidationSumCount = 2;

// The world sums every rank makes, named for the watchdog in the same words on every rank.
inline constexpr const char* kStepSums = "the step's sum of loss and gradient norm";
inline constexpr const char* kValidationSums = "the sum of the validation loss";

// A stage's training state on the host, handed from one runtime to the next of the same stages
// (re-balancing changes only the batch split): the old runtime is freed before the new one
// allocates, so a switch never holds two runtimes' device memory at once.
struct StageState {
  std::vector<float> params;          // (stage layout size)
  std::vector<float> first_moments;   // (AdamW::moment_size) each
  std::vector<float> second_moments;
  int steps_taken = 0;
};

class RankRuntime {
 public:
  virtual ~RankRuntime() = default;

  // One optimizer step at learning rate lr, the loss multiplied by loss_scale for backward (1
  // without loss scaling). Collective.
  virtual StepResult step(int step, SampleStream& train, float lr, float loss_scale, StepTrace& trace) = 0;
  // Mean per-sample validation loss over the first `samples` windows of `val`, and the
  // activations saturated meanwhile (every rank gets the result; evaluation_share says which
  // pipeline takes which). Collective.
  virtual Evaluation evaluate(SampleStream& val, int samples) = 0;
  // Rank 0 receives the whole model in the one-stage layout of ParamLayout(model, {0, L})
  // (`full` holds its size()); the lowest owner of each tensor sends it. Collective.
  virtual void gather_parameters(float* full) = 0;
  // Collective: writes parameters and AdamW moments to an HDF5 checkpoint (lib/io/checkpoint.hpp),
  // each tensor by its lowest owner. InputError when the file cannot be created.
  virtual void save_checkpoint(const std::string& path, const CheckpointHeader& header) = 0;
  // This rank's state from a checkpoint of any plan; returns its header. InputError when the
  // file is not a checkpoint of this model.
  virtual CheckpointHeader load_checkpoint(const std::string& path) = 0;

  // Copies this rank's parameters and AdamW state to the host, for the next runtime of the same
  // stages (an idle rank has none: an empty state).
  virtual StageState release_state() { return {}; }

  // In the next step only, this rank's own gradients are checked before they are summed
  // (StepResult::own_overflow), its sums all started after its last backward: for the step whose
  // overflow would end the job, so that its error names the ranks that overflowed. A rank
  // without gradients ignores it.
  virtual void check_own_gradients_next_step() {}
  // Compute `factor` times slower from the next step on (the test switch of lib/runtime/slowdown.hpp);
  // a rank without compute ignores it.
  virtual void slow_down(double /*factor*/) {}

  virtual int collectives_per_step() const = 0;   // gradient sums on this rank
  virtual std::string reduction_path() const = 0;  // one line for the log
};

// Per tensor of the one-stage layout of `model`: the lowest rank that holds it (never an idle
// one): the rank that writes it to checkpoints and sends it to rank 0.
std::vector<int> tensor_owners(const ModelConfig& model, const Plan& plan, int world_size);

// Collective: rank 0 assembles the whole model in `full` (the one-stage layout `whole`); each
// owner hands its tensors over with read_mine(tensor, host buffer of tensor.size floats).
void gather_whole_model(const ParamLayout& whole, const std::vector<int>& owners, int rank,
                        const std::function<void(const ParamTensor&, float*)>& read_mine, float* full);

// Validation covers windows [0, samples) of the validation stream whatever the plan: pipeline p
// takes the windows [first, first + counted), its proportional share of `samples` by its share of
// the global batch (cumulative shares rounded down, so that the shares add up to `samples`), in
// micro-batches of the plan's size; the last one is padded with the windows after it, whose loss
// is not counted.
struct EvalShare {
  uint64_t first = 0;     // the pipeline's first window
  int counted = 0;        // its windows
  int micro_batches = 0;  // ceil(counted / micro_batch)
};
EvalShare evaluation_share(const Plan& plan, int pipeline, int samples);

}  // namespace eth

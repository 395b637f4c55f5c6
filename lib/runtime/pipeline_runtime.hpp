// One rank's part of an HPP training step: its stage of its pipeline, driven through the 1F1B
// action list of lib/plan/schedule.hpp, with activations and gradients moved between stages by m:n
// row exchanges, gradients aggregated block-wise (lib/runtime/grad_sync.hpp), and AdamW.
//
// Equivalence: pipeline p takes the global batch's samples [first_sample(p), + samples), in
// micro-batches; a rank of a split stage takes its split of each. Gradients are per-sample sums
// everywhere; after aggregation every owner of a parameter holds the same full-batch sum, and
// the optimizer applies 1/global_batch. A step therefore equals one device's step on the whole
// global batch, up to float rounding.
//
// Execution: stage work is only enqueued on the backend's stream (kernels/device.hpp). A send
// or a reduction starts after an event recorded once its data is final; a receive is posted
// once the backward that frees its buffer has completed; a slot is overwritten once its last
// send has completed (the schedule's buffer rules, lib/plan/schedule.hpp, kept by
// lib/runtime/stage_transfers.hpp). Device buffers reach MPI
// directly or through pinned mirrors (mpi_topology/wire_buffer.hpp). The host waits for the
// device only there, and once per step to read the loss and the gradient norm.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "lib/io/checkpoint.hpp"
#include "lib/io/step_trace.hpp"
#include "lib/io/token_data.hpp"
#include "lib/model/optimizer.hpp"
#include "lib/model/stage.hpp"
#include "lib/plan/schedule.hpp"
#include "lib/runtime/fault_injection.hpp"
#include "lib/runtime/grad_sync.hpp"
#include "lib/runtime/late_embedding_rows.hpp"
#include "lib/runtime/parallel_context.hpp"
#include "lib/runtime/rank_runtime.hpp"
#include "lib/runtime/stage_transfers.hpp"

namespace eth {

class PipelineRuntime final : public RankRuntime {
 public:
  PipelineRuntime(const ModelConfig& model, const Plan& plan, const ParallelContext& ctx, int seq_len,
                  GradSyncMode sync, const AdamWConfig& adamw, kernels::Backend& backend,
                  CommChoice comm, uint64_t seed, const StageState* carried = nullptr);

  StepResult step(int step, SampleStream& train, float lr, float loss_scale, StepTrace& trace) override;

  Evaluation evaluate(SampleStream& val, int samples) override;
  void gather_parameters(float* full) override;
  void save_checkpoint(const std::string& path, const CheckpointHeader& header) override;
  CheckpointHeader load_checkpoint(const std::string& path) override;
  StageState release_state() override;
  void check_own_gradients_next_step() override { check_own_ = true; }
  void slow_down(double factor) override { slowdown_ = factor; }
  int collectives_per_step() const override { return sync_->collectives_per_step(); }
  std::string reduction_path() const override;
  const Stage& stage() const { return stage_; }

 private:
  // One action of the schedule each (step() interprets the list); micro-batch i of the step
  // starts at sample `base` + i * micro_batch of the training stream.
  void forward(int step, const Action& a, SampleStream& train, uint64_t base);
  void backward(int step, const Action& a);
  void reduce_grads(int step);
  // The optimizer step: the global loss and gradient norm, clipping, AdamW, the sharded blocks'
  // all-gather.
  StepResult apply_step(float lr);
  // This rank's samples of micro-batch i: its share of a full one or of a smaller last one.
  bool short_micro_batch(int i) const { return pipe_.rows(i) < pipe_.micro_batch; }
  int my_rows(int i) const { return short_micro_batch(i) ? ctx_.role.last_samples : ctx_.role.samples; }
  // `count` consecutive samples from `first` (this rank's share of a micro-batch).
  void fetch(SampleStream& data, uint64_t first, int count, std::vector<int32_t>& inputs, std::vector<int32_t>& targets);
  void poison_block(const GradientPoison& poison);  // --inject-fault nan, overflow: into the block's gradient
  // Ends compute k's timing; under --slowdown, first stalls the stream for (factor - 1) times it.
  void end_compute(int k);
  double device_compute_ms() const;  // the step's forwards and backwards, as the device timed them

  // Evaluation (pipeline_evaluation.cpp). The last stage counts the loss of its first
  // counted_rows samples only.
  void forward_only(int micro_batch, const int32_t* inputs, const int32_t* targets, int counted_rows);

  // State (pipeline_state.cpp). Parameters (stage layout size) or a moment (AdamW::moment_size).
  float* state_buffer(CheckpointGroup group);
  // Checkpoints: the moments of each sharded block gathered to its lowest owner, which writes
  // them; per block of shards_, empty where this rank writes no sharded moments.
  struct GatheredMoments {
    std::vector<float> m, v;
  };
  std::vector<GatheredMoments> gather_sharded_moments();
  void take_state(const StageState& state);    // parameters, moments and step count from the host

  const ModelConfig& model_;
  const Plan& plan_;
  const ParallelContext& ctx_;
  kernels::Backend& backend_;
  const PlanPipeline& pipe_;
  int T_;
  int slots_;
  Stage stage_;
  std::vector<BlockShard> shards_;                         // the stage's blocks, sharded or not
  AdamW optimizer_;
  ParamLayout whole_;                                      // the one-stage layout of the model
  LateEmbeddingRows late_rows_;                            // on where the tied embedding is summed early
  std::unique_ptr<GradSync> sync_;
  std::vector<Action> actions_;
  StageTransfers transfers_;
  std::vector<int> owners_;                                // per tensor of whole_: its lowest owner
  double slowdown_ = 1.0;                                  // --slowdown (lib/runtime/slowdown.hpp)
  float loss_scale_ = 1.0f;                                // the step's (step()): dlogits and unscaling
  bool check_own_ = false;                                 // this step's own gradients checked before the sums
  bool own_overflow_ = false;                              // and found not finite
  // Per forward (micro-batch i) and backward (m + i): timed events around its compute, so that
  // the step's compute is measured on the device (online re-balancing reads it).
  std::vector<kernels::Event> compute_start_, compute_end_;

  std::vector<int32_t> inputs_, targets_;                  // (B, T) host, this rank's samples
};

}  // namespace eth

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
// send has completed (the schedule's buffer rules, lib/plan/schedule.hpp). Device buffers reach MPI
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
#include "lib/model/lr_schedule.hpp"
#include "lib/model/optimizer.hpp"
#include "lib/model/stage.hpp"
#include "lib/plan/schedule.hpp"
#include "lib/runtime/grad_sync.hpp"
#include "lib/runtime/late_embedding_rows.hpp"
#include "lib/runtime/parallel_context.hpp"
#include "lib/runtime/rank_runtime.hpp"
#include "mpi_topology/wire_buffer.hpp"

namespace eth {

class PipelineRuntime final : public RankRuntime {
 public:
  PipelineRuntime(const GptConfig& model, const Plan& plan, const ParallelContext& ctx, int seq_len,
                  GradSyncMode sync, const AdamWConfig& adamw, kernels::Backend& backend,
                  std::unique_ptr<SumReducer> reducer, uint64_t seed, PipelineRuntime* previous = nullptr);

  StepResult step(int step, SampleStream& train, float lr, StepTrace& trace) override;

  // Bytes of device memory a runtime allocates for `role` (of a pipeline of `stages` stages):
  // parameters, gradients, both AdamW moments (of its shards only in the plan's sharded blocks
  // and, with `shard_all` (--shard-optimizer), in every block of several owners), the
  // activations of its in-flight micro-batches, the stage's scratch and the transfer buffers.
  // `attention`: what the backend runs at seq_len (Backend::attention_path). For checking a plan
  // against a device.
  static size_t device_bytes(const GptConfig& model, const Plan& plan, const RankRole& role, int world_rank,
                             int seq_len, bool shard_all, kernels::AttentionPath attention);

  double evaluate(SampleStream& val, int samples) override;
  void gather_parameters(float* full) override;
  void save_checkpoint(const std::string& path, const CheckpointHeader& header) override;
  CheckpointHeader load_checkpoint(const std::string& path) override;
  void slow_down(double factor) override { slowdown_ = factor; }
  int collectives_per_step() const override { return sync_.collectives_per_step(); }
  std::string reduction_path() const override;
  const Stage& stage() const { return stage_; }

 private:
  // `count` consecutive samples from `first` (this rank's share of a micro-batch).
  void fetch(SampleStream& data, uint64_t first, int count, std::vector<int32_t>& inputs, std::vector<int32_t>& targets);
  // The last stage counts the loss of its first counted_rows samples only.
  void forward_only(int micro_batch_tag, const int32_t* inputs, const int32_t* targets, int counted_rows);
  // Enqueues the wire copy, records `ready` after it, waits for it, and posts the sends.
  void send_rows(const RowExchange& exchange, WireBuffer& wire, kernels::Event& ready, int tag,
                 std::vector<MPI_Request>& requests);
  // Parameters (stage layout size) or a moment (AdamW::moment_size).
  float* state_buffer(CheckpointGroup group);
  // Checkpoints: the moments of each sharded block gathered to its lowest owner, which writes
  // them; per block of shards_, empty where this rank writes no sharded moments.
  struct GatheredMoments {
    std::vector<float> m, v;
  };
  std::vector<GatheredMoments> gather_sharded_moments();
  void take_state(PipelineRuntime& old);        // its parameters, moments and step count
  void poison_block(int block);  // --inject-fault nan: a NaN into the block's gradient
  // Ends compute k's timing; under --slowdown, first stalls the stream for (factor - 1) times it.
  void end_compute(int k);

  const GptConfig& model_;
  const Plan& plan_;
  const ParallelContext& ctx_;
  kernels::Backend& backend_;
  const PlanPipeline& pipe_;
  int T_, C_;
  int slots_;
  Stage stage_;
  std::vector<BlockShard> shards_;                         // the stage's blocks, sharded or not
  AdamW optimizer_;
  ParamLayout whole_;                                      // the one-stage layout of the model
  LateEmbeddingRows late_rows_;                            // on where the tied embedding is summed early
  GradSync sync_;
  std::vector<Action> actions_;
  std::vector<int> owners_;                                // per tensor of whole_: its lowest owner
  double slowdown_ = 1.0;                                  // --slowdown (lib/runtime/slowdown.hpp)
  // Per forward (micro-batch i) and backward (m + i): timed events around its compute, so that
  // the step's compute is measured on the device (online re-balancing reads it).
  std::vector<kernels::Event> compute_start_, compute_end_;

  std::vector<int32_t> inputs_, targets_;                  // (B, T) host, this rank's samples
  kernels::DeviceBuffer<float> dout_;                      // (B, T, C) gradient from the next stage
  kernels::DeviceBuffer<float> grad_send_;                 // (slots, B, T, C) gradients in flight back
  // The same buffers as MPI sees them (wire_buffer.hpp), per slot where there are several.
  std::vector<WireBuffer> input_wires_, output_wires_, grad_send_wires_;
  WireBuffer dout_wire_;
  std::vector<kernels::Event> backward_done_;              // per micro-batch
  std::vector<kernels::Event> output_final_, grad_final_;  // per slot: staged, ready to send
  std::vector<std::vector<MPI_Request>> activation_sends_; // per slot
  std::vector<std::vector<MPI_Request>> grad_sends_;       // per slot
};

}  // namespace eth

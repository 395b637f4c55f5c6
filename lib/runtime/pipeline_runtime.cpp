#include "lib/runtime/pipeline_runtime.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "kernels/twin_backend.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/runtime/fault_injection.hpp"
#include "mpi_topology/host_messages.hpp"

namespace eth {
namespace {

// Where each action of a step is, for the progress record (watchdog.hpp) and error lines.
const char* phase_of(ActionKind kind) {
  switch (kind) {
    case ActionKind::recv_activation:
    case ActionKind::forward:
    case ActionKind::send_activation: return "forward";
    case ActionKind::recv_grad:
    case ActionKind::backward:
    case ActionKind::send_grad: return "backward";
    case ActionKind::reduce_grads: return "reduction";
    case ActionKind::optimizer_step: return "optimizer";
  }
  return "";
}

}  // namespace

PipelineRuntime::PipelineRuntime(const ModelConfig& model, const Plan& plan, const ParallelContext& ctx, int seq_len,
                                 GradSyncMode sync, const AdamWConfig& adamw, kernels::Backend& backend,
                                 CommChoice comm, uint64_t seed, const StageState* carried)
    : model_(model),
      plan_(plan),
      ctx_(ctx),
      backend_(backend),
      pipe_(plan.pipelines[ctx.role.pipeline]),
      T_(seq_len),
      slots_(activation_slots(ctx.role.stage, ctx.stages, pipe_.micro_batches)),
      stage_(model, pipe_.stages[ctx.role.stage].layers, ctx.role.samples, seq_len, slots_, backend,
             pipe_.stages[ctx.role.stage].recompute),
      shards_(block_shards(ctx.blocks, stage_.layout(), ctx.world_rank, sharded_block_flags(plan, ctx.blocks, adamw.shard))),
      optimizer_(stage_.layout(), updated_spans(shards_, stage_.layout().size()), adamw, backend),
      whole_(model, {0, model.num_layers}),
      late_rows_(sync == GradSyncMode::block && ctx.tied.is_member() &&
                         tied_sum_starts_early(plan, model, seq_len)
                     ? LateEmbeddingRows(ctx.tied, backend, model.channels,
                                         ctx.first_stage() ? ctx.role.samples * seq_len : 0,
                                         tied_rows_kept_late(plan, seq_len))
                     : LateEmbeddingRows()),
      sync_(make_grad_sync(sync, ctx, stage_.layout(), whole_, std::move(comm.reducer), backend, stage_.grads(),
                           late_rows_.on(), shards_, stage_.params())),
      actions_(one_f_one_b(pipe_, ctx.role.stage)),
      transfers_(ctx, pipe_, actions_, stage_, slots_, backend, seq_len, std::move(comm.transfer_streams),
                 comm.sends_read_device_buffers),
      owners_(tensor_owners(model, plan, ctx.world_size)) {
  if (carried) {
    take_state(*carried);
  } else {
    std::vector<float> host(stage_.layout().size());
    init_parameters(model, stage_.layout(), seed, host.data());
    backend.copy_to_device(stage_.params(), host.data(), host.size() * sizeof(float));
    stage_.params_written();
  }
  // The backend's workspace (the bf16 path's working copies, the GPU ops' launch workspace),
  // sized before the first step so that no step allocates (kernels/workspace.hpp; lib/plan/
  // memory_model counts it): for the widest op of this stage, and the embedding backward of the
  // tied group's gathered rows.
  const size_t gathered = late_rows_.on() ? static_cast<size_t>(tied_rows_kept_late(plan, seq_len)) : 0;
  backend.reserve_workspace(stage_shape(model, stage_.layout().layers(), ctx.role.samples, seq_len, gathered));
  const size_t BT = static_cast<size_t>(ctx.role.samples) * T_;
  inputs_.resize(BT);
  targets_.resize(BT);
  for (int k = 0; k < 2 * pipe_.micro_batches; k++) {
    compute_start_.push_back(kernels::Event::timed(backend));
    compute_end_.push_back(kernels::Event::timed(backend));
  }
}

void PipelineRuntime::fetch(SampleStream& data, uint64_t first, int count, std::vector<int32_t>& inputs,
                            std::vector<int32_t>& targets) {
  for (int b = 0; b < count; b++)
    data.sample(first + static_cast<uint64_t>(b), inputs.data() + static_cast<size_t>(b) * T_,
                targets.data() + static_cast<size_t>(b) * T_);
}

void PipelineRuntime::poison_block(const GradientPoison& poison) {
  const GradSync::Range range = sync_->block_range(poison.block);
  assert(range.size > 0);  // the trainer checked that this rank holds the block
  backend_.copy_to_device(stage_.grads() + range.offset, &poison.value, sizeof(float));  // enqueued: before the backward
}

StepResult PipelineRuntime::step(int step, SampleStream& train, float lr, float loss_scale, StepTrace& trace) {
  loss_scale_ = loss_scale;
  // Micro-batch i starts at sample base + i * micro_batch (only the last may be smaller).
  const uint64_t base = static_cast<uint64_t>(step) * plan_.global_batch + plan_.first_sample(ctx_.role.pipeline);
  trace.begin_step();
  stage_.zero_grads();
  transfers_.begin_step();
  StepResult result;
  for (size_t index = 0; index < actions_.size(); index++) {
    const Action& a = actions_[index];
    const int i = a.micro_batch;
    const double t0 = trace.now_ms();
    set_progress(step + 1, phase_of(a.kind));
    switch (a.kind) {
      case ActionKind::recv_activation:
      case ActionKind::recv_grad:
        transfers_.receive(index);
        trace.add(SpanKind::comm_wait, i, t0);
        break;
      case ActionKind::forward:
        forward(step, a, train, base);
        trace.add(SpanKind::forward, i, t0);
        break;
      case ActionKind::send_activation:
        transfers_.send_activations(i);
        trace.add(SpanKind::comm_wait, i, t0);
        break;
      case ActionKind::backward:
        backward(step, a);
        trace.add(SpanKind::backward, i, t0);
        break;
      case ActionKind::send_grad:
        transfers_.send_grads(a, stage_.input_grad(), my_rows(i));
        trace.add(SpanKind::comm_wait, i, t0);
        break;
      case ActionKind::reduce_grads:
        reduce_grads(step);
        trace.add(SpanKind::reduce, -1, t0);
        break;
      case ActionKind::optimizer_step:
        result = apply_step(lr);
        trace.add(SpanKind::optimizer, -1, t0);
        break;
    }
    transfers_.post_ready_receives(index + 1);
    sync_->poll();
  }
  trace.set_device_compute(device_compute_ms());
  trace.set_stage_bytes_sent(transfers_.step_bytes_sent());
  trace.end_step();
  return result;
}

void PipelineRuntime::forward(int step, const Action& a, SampleStream& train, uint64_t base) {
  const int i = a.micro_batch, slot = i % slots_;
  const bool first = ctx_.first_stage(), last = ctx_.last_stage();
  fault_point(FaultPhase::forward, step);
  transfers_.wait_slot_sent(a);
  if (first || last) {
    const int offset = short_micro_batch(i) ? ctx_.role.last_offset : ctx_.role.sample_offset;
    fetch(train, base + static_cast<uint64_t>(i) * pipe_.micro_batch + offset, my_rows(i), inputs_, targets_);
  }
  compute_start_[i].record();
  stage_.forward(slot, inputs_.data(), first ? nullptr : stage_.input_buffer(slot), my_rows(i));
  if (last) stage_.loss(slot, targets_.data(), loss_scale_);
  end_compute(i);
}

void PipelineRuntime::backward(int step, const Action& a) {
  // The last backward reports finished units, so that their reductions start early. There,
  // where the tied embedding is summed early, a first stage keeps its embedding rows out of dwte
  // (lib/runtime/late_embedding_rows.hpp).
  const int i = a.micro_batch, m = pipe_.micro_batches;
  // A rank armed to start its sums in reverse order (fault_injection.hpp), or checking its own
  // gradients before they are summed, starts none early.
  const bool final_backward = i == m - 1, early_sums = final_backward && !fault_reverse_sums(step) && !check_own_;
  fault_point(FaultPhase::backward, step);
  // An injected NaN lands before the last backward adds to the block and starts its sum.
  if (const GradientPoison poison = fault_gradient_poison(step); final_backward && poison.block >= 0)
    poison_block(poison);
  // An injected lost micro-batch: what the first backward added, zeroed before the second adds.
  if (i == 1 && fault_lose_micro_batch(step)) stage_.zero_grads();
  compute_start_[m + i].record();
  if (early_sums) sync_->unit_done(kLastBackwardBegins);
  KeptEmbeddingRows keep;
  if (final_backward && ctx_.first_stage() && late_rows_.on()) keep = {late_rows_.rows(), late_rows_.ids()};
  stage_.backward(i % slots_, transfers_.grad_from_next(), [&](int unit) {
    if (early_sums) sync_->unit_done(unit);
  }, keep);
  transfers_.backward_enqueued(i);
  end_compute(m + i);
}

void PipelineRuntime::reduce_grads(int step) {
  fault_point(FaultPhase::reduction, step);
  if (check_own_) own_overflow_ = !std::isfinite(backend_.sum_of_squares(stage_.grads(), stage_.layout().size()));
  if (fault_reverse_sums(step))
    sync_->finish_in_reverse_order();
  else
    sync_->finish();
  if (late_rows_.on())
    late_rows_.add_gathered(stage_.grads() + stage_.layout().head_wte(),
                            ctx_.first_stage() ? my_rows(pipe_.micro_batches - 1) * T_ : 0);
  transfers_.finish_sends();
}

StepResult PipelineRuntime::apply_step(float lr) {
  // Every rank learns the global loss (from the last stages), norm (each block once) and
  // saturations: the step's one read of device results.
  std::string nonfinite;
  double sums[kStepSumCount] = {ctx_.last_stage() ? stage_.take_loss_sum() : 0.0,
                                sync_->owned_sum_of_squares(backend_, nonfinite),
                                static_cast<double>(transfers_.take_saturated())};
  world_sum(sums, kStepSumCount, kStepSums);
  StepResult result = agreed_step_result(sums, plan_.global_batch, loss_scale_);
  result.nonfinite = nonfinite;
  result.own_overflow = check_own_ && own_overflow_;
  check_own_ = own_overflow_ = false;
  if (!result.applied) return result;
  // The gradients are sums over the batch's samples, loss_scale_ times the true ones.
  const double scale =
      clip_factor(result.grad_norm, optimizer_.config().max_grad_norm) / plan_.global_batch / loss_scale_;
  optimizer_.step(stage_.params(), stage_.param_copies(), stage_.grads(), lr, static_cast<float>(scale));
  sync_->gather_params();
  // The other owners' shards arrived as fp32 masters: their copies are made here.
  for (const FloatRange& gathered : uncovered(optimizer_.spans(), stage_.layout().size()))
    stage_.params_written(gathered);
  return result;
}

double PipelineRuntime::device_compute_ms() const {
  double ms = 0;
  for (size_t k = 0; k < compute_end_.size(); k++) ms += compute_end_[k].ms_since(compute_start_[k]);
  return ms;
}

std::string PipelineRuntime::reduction_path() const {
  std::string path = sync_->path();
  if (late_rows_.on())
    path += "; the tied embedding summed from the head's backward on, its last embedding rows gathered after";
  const long sharded = std::count_if(shards_.begin(), shards_.end(), [](const BlockShard& s) { return s.sharded; });
  if (sharded > 0)
    path += strprintf("; AdamW moments sharded in %ld block(s), %zu of the stage's %zu floats kept", sharded,
                      optimizer_.moment_size(), stage_.layout().size());
  return path + "; stage transfers: " + transfers_.path();
}

void PipelineRuntime::end_compute(int k) {
  kernels::Event& end = compute_end_[k];
  end.record();
  if (slowdown_ <= 1.0) return;
  backend_.stall((slowdown_ - 1.0) * end.ms_since(compute_start_[k]));
  end.record();
}

}  // namespace eth

#include "lib/runtime/pipeline_runtime.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "lib/base/strprintf.hpp"
#include "lib/runtime/fault_injection.hpp"
#include "mpi_topology/host_messages.hpp"
#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/shard_collectives.hpp"

namespace eth {
namespace {

const ParamTensor* find_tensor(const ParamLayout& layout, const std::string& name) {
  for (const ParamTensor& t : layout.tensors())
    if (t.name == name) return &t;
  return nullptr;
}

// Message tags: micro-batch i's activations travel as 2i, its gradients as 2i + 1. Messages
// between two ranks with one tag never overtake each other, so steps need no tag of their own.
int activation_tag(int micro_batch) { return 2 * micro_batch; }
int grad_tag(int micro_batch) { return 2 * micro_batch + 1; }

// What a wait on transfers of micro-batch i is for, as the watchdog names it.
std::string ranks_text(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t k = 0; k < ranks.size(); k++) text += (k ? ", " : "") + std::to_string(ranks[k]);
  return text;
}
WaitSite receiving(const char* what, int i, std::vector<int> from) {
  std::string text = std::string("receive of micro-batch ") + std::to_string(i) + "'s " + what + " from " + ranks_text(from);
  return {std::move(text), std::move(from)};
}
WaitSite sending(const char* what, int i, std::vector<int> to) {
  std::string text = std::string("send of micro-batch ") + std::to_string(i) + "'s " + what + " to " + ranks_text(to);
  return {std::move(text), std::move(to)};
}

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

PipelineRuntime::PipelineRuntime(const GptConfig& model, const Plan& plan, const ParallelContext& ctx, int seq_len,
                                 GradSyncMode sync, const AdamWConfig& adamw, kernels::Backend& backend,
                                 std::unique_ptr<SumReducer> reducer, uint64_t seed, PipelineRuntime* previous)
    : model_(model),
      plan_(plan),
      ctx_(ctx),
      backend_(backend),
      pipe_(plan.pipelines[ctx.role.pipeline]),
      T_(seq_len),
      C_(model.channels),
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
      sync_(ctx, stage_.layout(), whole_, sync, std::move(reducer), backend, stage_.grads(), late_rows_.on(), shards_,
            stage_.params()),
      actions_(one_f_one_b(pipe_, ctx.role.stage)),
      owners_(tensor_owners(model, plan, ctx.world_size)) {
  if (previous) {
    take_state(*previous);
  } else {
    std::vector<float> host(stage_.layout().size());
    init_gpt2_parameters(model, stage_.layout(), seed, host.data());
    backend.copy_to_device(stage_.params(), host.data(), host.size() * sizeof(float));
  }
  const size_t BT = static_cast<size_t>(ctx.role.samples) * T_;
  const size_t rows = BT * C_;  // one micro-batch of this rank's activations
  inputs_.resize(BT);
  targets_.resize(BT);
  dout_ = kernels::DeviceBuffer<float>(backend, rows);
  grad_send_ = kernels::DeviceBuffer<float>(backend, rows * slots_);
  const bool direct = mpi_reads_device_buffers(backend, MpiTraffic::point_to_point);
  for (int slot = 0; slot < slots_; slot++) {
    if (!ctx.first_stage()) {
      input_wires_.emplace_back(backend, stage_.input_buffer(slot), rows, direct);
      grad_send_wires_.emplace_back(backend, grad_send_.data() + rows * slot, rows, direct);
      grad_final_.emplace_back(backend);
    }
    if (!ctx.last_stage()) {
      output_wires_.emplace_back(backend, stage_.output(slot), rows, direct);
      output_final_.emplace_back(backend);
    }
  }
  if (!ctx.last_stage()) dout_wire_ = WireBuffer(backend, dout_.data(), rows, direct);
  for (int i = 0; i < pipe_.micro_batches; i++) backward_done_.emplace_back(backend);
  for (int k = 0; k < 2 * pipe_.micro_batches; k++) {
    compute_start_.push_back(kernels::Event::timed(backend));
    compute_end_.push_back(kernels::Event::timed(backend));
  }
  activation_sends_.resize(static_cast<size_t>(slots_));
  grad_sends_.resize(static_cast<size_t>(slots_));
}

size_t PipelineRuntime::device_bytes(const GptConfig& model, const Plan& plan, const RankRole& role, int world_rank,
                                     int seq_len, bool shard_all, kernels::AttentionPath attention) {
  const PlanPipeline& pipe = plan.pipelines[role.pipeline];
  const PlanStage& stage = pipe.stages[role.stage];
  const LayerRange layers = stage.layers;
  const int stages = static_cast<int>(pipe.stages.size());
  const size_t slots = static_cast<size_t>(activation_slots(role.stage, stages, pipe.micro_batches));
  const Stage::ActivationFootprint acts = Stage::activation_footprint(model, layers, role.samples, seq_len, attention, stage.recompute);
  const size_t rows = static_cast<size_t>(role.samples) * seq_len * model.channels;  // one micro-batch's
  const size_t floats = 2 * ParamLayout(model, layers).size() + 2 * moment_floats(model, plan, world_rank, shard_all) +
                        acts.per_slot * slots + acts.scratch + rows * (slots + 1);  // dout and the gradient send slots
  return floats * sizeof(float);
}

void PipelineRuntime::fetch(SampleStream& data, uint64_t first, int count, std::vector<int32_t>& inputs,
                            std::vector<int32_t>& targets) {
  for (int b = 0; b < count; b++)
    data.sample(first + static_cast<uint64_t>(b), inputs.data() + static_cast<size_t>(b) * T_,
                targets.data() + static_cast<size_t>(b) * T_);
}

void PipelineRuntime::poison_block(int block) {
  const GradSync::Range range = sync_.block_range(block);
  assert(range.size > 0);  // the trainer checked that this rank holds the block
  const float nan = std::nanf("");
  backend_.copy_to_device(stage_.grads() + range.offset, &nan, sizeof(float));  // enqueued: before the backward
}

void PipelineRuntime::send_rows(const RowExchange& exchange, WireBuffer& wire, kernels::Event& ready, int tag,
                                std::vector<MPI_Request>& requests) {
  wire.stage_out();
  ready.record();
  ready.wait();  // MPI reads the rows from the host's side of the stream
  exchange.post_sends(ctx_.world_rank, wire.wire(), static_cast<size_t>(T_) * C_, tag, world_comm(), requests);
}

StepResult PipelineRuntime::step(int step, SampleStream& train, float lr, StepTrace& trace) {
  const size_t row = static_cast<size_t>(T_) * C_;  // one sample's activations
  const int rank = ctx_.world_rank;
  const bool first = ctx_.first_stage(), last = ctx_.last_stage();
  // Micro-batch i starts at sample base + i * micro_batch (only the last may be smaller).
  const uint64_t base = static_cast<uint64_t>(step) * plan_.global_batch + plan_.first_sample(ctx_.role.pipeline);
  auto is_short = [&](int i) { return pipe_.rows(i) < pipe_.micro_batch; };
  auto my_rows = [&](int i) { return is_short(i) ? ctx_.role.last_samples : ctx_.role.samples; };
  trace.begin_step();
  stage_.zero_grads();
  StepResult result;
  // Receives are posted as early as the schedule's buffer rule allows, so that transfers
  // overlap compute: once the backward that frees the buffer has completed on the device.
  std::vector<std::vector<MPI_Request>> receives(actions_.size());
  std::vector<bool> posted(actions_.size(), false);
  int backwards_enqueued = 0;
  auto buffer_free = [&](const Action& r) {
    const int k = r.posted_after_backward;
    return k < 0 || (k < backwards_enqueued && backward_done_[k].done());
  };
  auto post_receive = [&](size_t j) {
    const Action& r = actions_[j];
    const ParallelContext::Exchanges& x = ctx_.exchanges(is_short(r.micro_batch));
    if (r.kind == ActionKind::recv_activation) {
      x.from_previous.post_recvs(rank, input_wires_[r.micro_batch % slots_].wire(), row,
                                    activation_tag(r.micro_batch), world_comm(), receives[j]);
    } else {
      x.grads_from_next.post_recvs(rank, dout_wire_.wire(), row, grad_tag(r.micro_batch), world_comm(),
                                      receives[j]);
    }
    posted[j] = true;
  };
  auto post_ready_receives = [&](size_t from) {
    for (ActionKind kind : {ActionKind::recv_activation, ActionKind::recv_grad}) {
      for (size_t j = from; j < actions_.size(); j++) {
        if (actions_[j].kind != kind) continue;
        if (!posted[j] && buffer_free(actions_[j])) post_receive(j);
        break;  // only the next receive of each kind
      }
    }
  };

  for (size_t index = 0; index < actions_.size(); index++) {
    const Action& a = actions_[index];
    const int i = a.micro_batch;
    const int slot = i < 0 ? 0 : i % slots_;
    const ParallelContext::Exchanges& x = ctx_.exchanges(i >= 0 && is_short(i));
    const double t0 = trace.now_ms();
    set_progress(step + 1, phase_of(a.kind));
    switch (a.kind) {
      case ActionKind::recv_activation:
      case ActionKind::recv_grad: {
        if (!posted[index]) {
          if (a.posted_after_backward >= 0) backward_done_[a.posted_after_backward].wait();
          post_receive(index);
        }
        wait_all(receives[index], a.kind == ActionKind::recv_activation
                                      ? receiving("activations", i, x.from_previous.senders_to(rank))
                                      : receiving("gradients", i, x.grads_from_next.senders_to(rank)));
        (a.kind == ActionKind::recv_activation ? input_wires_[slot] : dout_wire_).stage_in();
        trace.add(SpanKind::comm_wait, i, t0);
        break;
      }
      case ActionKind::forward:
        fault_point(FaultPhase::forward, step);
        if (a.after_send_of >= 0)  // the slot's output has left
          wait_all(activation_sends_[slot], sending("activations", a.after_send_of,
                                                    ctx_.exchanges(is_short(a.after_send_of)).to_next.receivers_from(rank)));
        if (first || last) {
          const int offset = is_short(i) ? ctx_.role.last_offset : ctx_.role.sample_offset;
          fetch(train, base + static_cast<uint64_t>(i) * pipe_.micro_batch + offset, my_rows(i), inputs_, targets_);
        }
        compute_start_[i].record();
        stage_.forward(slot, inputs_.data(), first ? nullptr : stage_.input_buffer(slot), my_rows(i));
        if (last) stage_.loss(slot, targets_.data(), true);
        end_compute(i);
        trace.add(SpanKind::forward, i, t0);
        break;
      case ActionKind::send_activation:
        send_rows(x.to_next, output_wires_[slot], output_final_[slot], activation_tag(i), activation_sends_[slot]);
        trace.add(SpanKind::comm_wait, i, t0);
        break;
      case ActionKind::backward: {
        // The last backward reports finished units, so that their reductions start early.
        // There, where the tied embedding is summed early, a first stage keeps its embedding rows
        // out of dwte (lib/runtime/late_embedding_rows.hpp).
        const bool final_backward = i == pipe_.micro_batches - 1;
        fault_point(FaultPhase::backward, step);
        // An injected NaN lands before the last backward adds to the block and starts its sum.
        if (const int block = fault_nan_block(step); final_backward && block >= 0) poison_block(block);
        compute_start_[pipe_.micro_batches + i].record();
        if (final_backward) sync_.unit_done(GradSync::kLastBackwardBegins);
        KeptEmbeddingRows keep;
        if (final_backward && first && late_rows_.on()) keep = {late_rows_.rows(), late_rows_.ids()};
        stage_.backward(slot, dout_.data(), [&](int unit) {
          if (final_backward) sync_.unit_done(unit);
        }, keep);
        backward_done_[i].record();
        backwards_enqueued++;
        end_compute(pipe_.micro_batches + i);
        trace.add(SpanKind::backward, i, t0);
        break;
      }
      case ActionKind::send_grad: {
        if (a.after_send_of >= 0)  // the slot's previous gradient has left
          wait_all(grad_sends_[slot],
                   sending("gradients", a.after_send_of,
                           ctx_.exchanges(is_short(a.after_send_of)).grads_to_previous.receivers_from(rank)));
        WireBuffer& wire = grad_send_wires_[slot];
        backend_.copy(wire.buffer(), stage_.input_grad(), sizeof(float) * my_rows(i) * row);
        send_rows(x.grads_to_previous, wire, grad_final_[slot], grad_tag(i), grad_sends_[slot]);
        trace.add(SpanKind::comm_wait, i, t0);
        break;
      }
      case ActionKind::reduce_grads:
        fault_point(FaultPhase::reduction, step);
        sync_.finish();
        if (late_rows_.on())
          late_rows_.add_gathered(stage_.grads() + stage_.layout().head_wte(), first ? my_rows(pipe_.micro_batches - 1) * T_ : 0);
        if (!last)
          for (auto& r : activation_sends_) wait_all(r, {"the step's last sends of activations", ctx_.full.to_next.receivers_from(rank)});
        if (!first)
          for (auto& r : grad_sends_)
            wait_all(r, {"the step's last sends of gradients", ctx_.full.grads_to_previous.receivers_from(rank)});
        trace.add(SpanKind::reduce, -1, t0);
        break;
      case ActionKind::optimizer_step: {
        // Every rank learns the global loss (from the last stages) and norm (each block once):
        // the step's one read of device results.
        double sums[2] = {last ? stage_.take_loss_sum() : 0.0, sync_.owned_sum_of_squares(backend_, result.nonfinite)};
        world_sum(sums, 2, kStepSums);
        result.loss = sums[0] / plan_.global_batch;
        result.grad_norm = std::sqrt(sums[1]) / plan_.global_batch;
        result.applied = std::isfinite(result.loss) && std::isfinite(result.grad_norm);
        if (result.applied) {
          const double scale = clip_factor(result.grad_norm, optimizer_.config().max_grad_norm) / plan_.global_batch;
          optimizer_.step(stage_.params(), stage_.grads(), lr, static_cast<float>(scale));
          sync_.gather_params();
        }
        trace.add(SpanKind::optimizer, -1, t0);
        break;
      }
    }
    post_ready_receives(index + 1);
    sync_.poll();
  }
  double device_ms = 0;
  for (size_t k = 0; k < compute_end_.size(); k++) device_ms += compute_end_[k].ms_since(compute_start_[k]);
  trace.set_device_compute(device_ms);
  trace.end_step();
  return result;
}

std::string PipelineRuntime::reduction_path() const {
  std::string path = sync_.path();
  if (late_rows_.on())
    path += "; the tied embedding summed from the head's backward on, its last embedding rows gathered after";
  const long sharded = std::count_if(shards_.begin(), shards_.end(), [](const BlockShard& s) { return s.sharded; });
  if (sharded > 0)
    path += strprintf("; AdamW moments sharded in %ld block(s), %zu of the stage's %zu floats kept", sharded,
                      optimizer_.moment_size(), stage_.layout().size());
  return path;
}

void PipelineRuntime::end_compute(int k) {
  kernels::Event& end = compute_end_[k];
  end.record();
  if (slowdown_ <= 1.0) return;
  backend_.stall((slowdown_ - 1.0) * end.ms_since(compute_start_[k]));
  end.record();
}

void PipelineRuntime::forward_only(int tag, const int32_t* inputs, const int32_t* targets, int counted_rows) {
  const size_t row = static_cast<size_t>(T_) * C_;
  std::vector<MPI_Request> requests;
  // Evaluation is not timed: wait for the previous forward, which read slot 0's input.
  backend_.synchronize();
  if (!ctx_.first_stage()) {
    ctx_.full.from_previous.post_recvs(ctx_.world_rank, input_wires_[0].wire(), row, tag, world_comm(), requests);
    wait_all(requests, {"receive of validation activations", ctx_.full.from_previous.senders_to(ctx_.world_rank)});
    input_wires_[0].stage_in();
  }
  stage_.forward(0, inputs, ctx_.first_stage() ? nullptr : stage_.input_buffer(0));
  if (ctx_.last_stage()) {
    stage_.loss(0, targets, false, counted_rows);
  } else {
    send_rows(ctx_.full.to_next, output_wires_[0], output_final_[0], tag, requests);
    wait_all(requests, {"send of validation activations", ctx_.full.to_next.receivers_from(ctx_.world_rank)});
  }
}

double PipelineRuntime::evaluate(SampleStream& val, int samples) {
  set_phase("evaluation");
  const EvalShare share = evaluation_share(plan_, ctx_.role.pipeline, samples);
  for (int i = 0; i < share.micro_batches; i++) {
    const int offset = i * pipe_.micro_batch;  // within the pipeline's windows
    fetch(val, share.first + static_cast<uint64_t>(offset + ctx_.role.sample_offset), ctx_.role.samples, inputs_,
          targets_);
    // This rank's rows that are the pipeline's windows, not the last micro-batch's padding.
    const int counted = std::clamp(share.counted - offset - ctx_.role.sample_offset, 0, ctx_.role.samples);
    forward_only(activation_tag(i), inputs_.data(), targets_.data(), counted);
  }
  double sum = ctx_.last_stage() ? stage_.take_loss_sum() : 0.0;
  world_sum(&sum, 1, kValidationSum);
  return sum / samples;
}

void PipelineRuntime::gather_parameters(float* full) {
  gather_whole_model(whole_, owners_, ctx_.world_rank, [&](const ParamTensor& t, float* host) {
    backend_.copy_to_host(host, stage_.params() + find_tensor(stage_.layout(), t.name)->offset, t.size * sizeof(float));
  }, full);
}

// The three flat buffers a checkpoint holds, by group.
float* PipelineRuntime::state_buffer(CheckpointGroup group) {
  switch (group) {
    case CheckpointGroup::params: return stage_.params();
    case CheckpointGroup::adam_m: return optimizer_.first_moments();
    case CheckpointGroup::adam_v: return optimizer_.second_moments();
  }
  return nullptr;
}

std::vector<PipelineRuntime::GatheredMoments> PipelineRuntime::gather_sharded_moments() {
  std::vector<GatheredMoments> gathered(shards_.size());
  std::vector<std::vector<float>> mine(2 * shards_.size());
  std::vector<PendingShards> pending;
  for (size_t b = 0; b < shards_.size(); b++) {
    const BlockShard& s = shards_[b];
    if (!s.sharded) continue;
    std::vector<int> counts;
    for (int i = 0; i < s.owners; i++) counts.push_back(static_cast<int>(shard_span(s.slice.size, s.owners, i).size));
    const ProcessGroup& group = ctx_.block_groups[static_cast<size_t>(s.block)];
    for (CheckpointGroup g : {CheckpointGroup::adam_m, CheckpointGroup::adam_v}) {
      std::vector<float>& shard = mine[2 * b + (g == CheckpointGroup::adam_v)];
      std::vector<float>& all = g == CheckpointGroup::adam_m ? gathered[b].m : gathered[b].v;
      shard.resize(s.mine().size);
      optimizer_.for_kept(s.mine(), [&](size_t at, size_t moment, size_t n) {
        backend_.copy_to_host(shard.data() + at, state_buffer(g) + moment, n * sizeof(float));
      });
      if (s.index == 0) all.resize(s.slice.size);
      pending.push_back(PendingShards::gather_to_first(group, shard.data(), all.data(), counts));
    }
  }
  for (PendingShards& p : pending) p.wait("gather of sharded AdamW moments for a checkpoint");
  return gathered;
}

void PipelineRuntime::save_checkpoint(const std::string& path, const CheckpointHeader& header) {
  const std::vector<GatheredMoments> gathered = gather_sharded_moments();
  CheckpointWriter writer(path, model_, header, world_comm());
  std::vector<float> host;
  bool written = false;
  for (size_t i = 0; i < whole_.tensors().size(); i++) {
    if (owners_[i] != ctx_.world_rank) continue;
    const ParamTensor& t = whole_.tensors()[i];
    const size_t offset = find_tensor(stage_.layout(), t.name)->offset;
    host.resize(t.size);
    backend_.copy_to_host(host.data(), stage_.params() + offset, t.size * sizeof(float));
    writer.write(CheckpointGroup::params, t, host.data());
    // A moment comes from the device where this rank keeps all of the tensor's, else from the
    // sharded block's gathered moments (this rank, the tensor's writer, is their first owner).
    const auto block = std::find_if(shards_.begin(), shards_.end(), [&](const BlockShard& s) {
      return s.sharded && s.slice.offset <= offset && offset < s.slice.end();
    });
    for (CheckpointGroup g : {CheckpointGroup::adam_m, CheckpointGroup::adam_v}) {
      if (block != shards_.end()) {
        const GatheredMoments& all = gathered[static_cast<size_t>(block - shards_.begin())];
        const float* from = (g == CheckpointGroup::adam_m ? all.m : all.v).data() + (offset - block->slice.offset);
        writer.write(g, t, from);
        continue;
      }
      optimizer_.for_kept({offset, t.size}, [&](size_t at, size_t moment, size_t n) {
        backend_.copy_to_host(host.data() + at, state_buffer(g) + moment, n * sizeof(float));
      });
      writer.write(g, t, host.data());
    }
    if (!written) fault_point(FaultPhase::checkpoint, header.step - 1);  // between this rank's dataset writes
    written = true;
  }
  if (!written) fault_point(FaultPhase::checkpoint, header.step - 1);
  writer.finish();
}

void PipelineRuntime::take_state(PipelineRuntime& from) {
  // Re-balancing keeps the stages, hence the blocks and shards.
  assert(from.stage_.layout().size() == stage_.layout().size() && from.optimizer_.moment_size() == optimizer_.moment_size());
  backend_.copy(stage_.params(), from.stage_.params(), stage_.layout().size() * sizeof(float));
  for (CheckpointGroup g : {CheckpointGroup::adam_m, CheckpointGroup::adam_v})
    backend_.copy(state_buffer(g), from.state_buffer(g), optimizer_.moment_size() * sizeof(float));
  optimizer_.set_steps_taken(from.optimizer_.steps_taken());
  backend_.synchronize();  // the copies have read the old buffers before they are freed
}

CheckpointHeader PipelineRuntime::load_checkpoint(const std::string& path) {
  CheckpointReader reader(path, model_);
  std::vector<float> host;
  for (const ParamTensor& t : stage_.layout().tensors()) {  // the tied head copy of wte reads "wte" too
    host.resize(t.size);
    reader.read(CheckpointGroup::params, t, host.data());
    backend_.copy_to_device(stage_.params() + t.offset, host.data(), t.size * sizeof(float));
    for (CheckpointGroup g : {CheckpointGroup::adam_m, CheckpointGroup::adam_v}) {  // the parts this rank keeps
      reader.read(g, t, host.data());
      optimizer_.for_kept({t.offset, t.size}, [&](size_t at, size_t moment, size_t n) {
        backend_.copy_to_device(state_buffer(g) + moment, host.data() + at, n * sizeof(float));
      });
    }
  }
  optimizer_.set_steps_taken(reader.header().step);
  return reader.header();
}

}  // namespace eth

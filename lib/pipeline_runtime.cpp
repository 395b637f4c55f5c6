#include "lib/pipeline_runtime.hpp"

#include <cmath>

#include "mpi_topology/mpi_session.hpp"

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

}  // namespace

PipelineRuntime::PipelineRuntime(const GptConfig& model, const Plan& plan, const ParallelContext& ctx, int seq_len,
                                 GradSyncMode sync, const AdamWConfig& adamw, kernels::Backend& backend,
                                 uint64_t seed)
    : model_(model),
      plan_(plan),
      ctx_(ctx),
      backend_(backend),
      pipe_(plan.pipelines[ctx.role.pipeline]),
      T_(seq_len),
      C_(model.channels),
      slots_(activation_slots(ctx.role.stage, ctx.stages, pipe_.micro_batches)),
      stage_(model, pipe_.stages[ctx.role.stage].layers, ctx.role.samples, seq_len, slots_, backend),
      optimizer_(stage_.layout(), adamw, backend),
      sync_(ctx, stage_.layout(), sync),
      actions_(one_f_one_b(pipe_, ctx.role.stage)),
      whole_(model, {0, model.num_layers}) {
  // Every rank can see every stage's layout: the owner of a tensor is the lowest rank holding it.
  std::vector<ParamLayout> layouts;
  for (const RankRole& role : rank_roles(plan, ctx.world_size))
    layouts.emplace_back(model, plan.pipelines[role.pipeline].stages[role.stage].layers);
  for (const ParamTensor& t : whole_.tensors()) {
    int owner = 0;
    while (find_tensor(layouts[owner], t.name) == nullptr) owner++;
    owners_.push_back(owner);
  }
  std::vector<float> host(stage_.layout().size());
  init_gpt2_parameters(model, stage_.layout(), seed, host.data());
  backend.copy_to_device(stage_.params(), host.data(), host.size() * sizeof(float));
  const size_t BT = static_cast<size_t>(ctx.role.samples) * T_;
  inputs_.resize(BT);
  targets_.resize(BT);
  dout_ = kernels::DeviceBuffer<float>(backend, BT * C_);
  grad_send_ = kernels::DeviceBuffer<float>(backend, BT * C_ * slots_);
  activation_sends_.resize(static_cast<size_t>(slots_));
  grad_sends_.resize(static_cast<size_t>(slots_));
}

void PipelineRuntime::fetch(SampleStream& data, uint64_t first, std::vector<int32_t>& inputs,
                            std::vector<int32_t>& targets) {
  for (int b = 0; b < ctx_.role.samples; b++)
    data.sample(first + static_cast<uint64_t>(b), inputs.data() + static_cast<size_t>(b) * T_,
                targets.data() + static_cast<size_t>(b) * T_);
}

void PipelineRuntime::wait_all(std::vector<MPI_Request>& requests) {
  MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  requests.clear();
}

StepResult PipelineRuntime::step(int step, SampleStream& train, float lr, StepTrace& trace) {
  const size_t row = static_cast<size_t>(T_) * C_;  // one sample's activations
  const int rank = ctx_.world_rank;
  const bool first = ctx_.first_stage(), last = ctx_.last_stage();
  // This rank's first sample of micro-batch i is base + i * micro_batch.
  const uint64_t base = static_cast<uint64_t>(step) * plan_.global_batch + plan_.first_sample(ctx_.role.pipeline) +
                        ctx_.role.sample_offset;
  float* grads = stage_.grads();
  trace.begin_step();
  stage_.zero_grads();
  double loss_sum = 0.0;
  StepResult result;
  // Receives are posted as early as their buffers allow, so that transfers overlap compute:
  // micro-batch i's activations go into slot i mod slots once micro-batch i - slots has been
  // backwarded; its gradient into dout once micro-batch i - 1 has.
  std::vector<std::vector<MPI_Request>> receives(actions_.size());
  std::vector<bool> posted(actions_.size(), false);
  int backwards_done = 0;
  auto post_receive = [&](size_t j) {
    const Action& r = actions_[j];
    if (r.kind == ActionKind::recv_activation) {
      ctx_.from_previous.post_recvs(rank, stage_.input_buffer(r.micro_batch % slots_), row, activation_tag(r.micro_batch),
                                    MPI_COMM_WORLD, receives[j]);
    } else {
      ctx_.grads_from_next.post_recvs(rank, dout_.data(), row, grad_tag(r.micro_batch), MPI_COMM_WORLD, receives[j]);
    }
    posted[j] = true;
  };
  auto post_ready_receives = [&](size_t from) {
    for (ActionKind kind : {ActionKind::recv_activation, ActionKind::recv_grad}) {
      for (size_t j = from; j < actions_.size(); j++) {
        if (actions_[j].kind != kind) continue;
        const int m = actions_[j].micro_batch;
        const bool free = kind == ActionKind::recv_activation ? m < backwards_done + slots_ : m <= backwards_done;
        if (!posted[j] && free) post_receive(j);
        break;  // only the next receive of each kind
      }
    }
  };

  for (size_t index = 0; index < actions_.size(); index++) {
    const Action& a = actions_[index];
    const int i = a.micro_batch;
    const int slot = i < 0 ? 0 : i % slots_;
    const double t0 = trace.now_ms();
    switch (a.kind) {
      case ActionKind::recv_activation:
      case ActionKind::recv_grad:
        if (!posted[index]) post_receive(index);
        wait_all(receives[index]);
        trace.add(SpanKind::comm_wait, i, t0);
        break;
      case ActionKind::forward:
        if (first || last) fetch(train, base + static_cast<uint64_t>(i) * pipe_.micro_batch, inputs_, targets_);
        stage_.forward(slot, inputs_.data(), first ? nullptr : stage_.input_buffer(slot));
        if (last) loss_sum += stage_.loss(slot, targets_.data(), true);
        trace.add(SpanKind::forward, i, t0);
        break;
      case ActionKind::send_activation:
        wait_all(activation_sends_[slot]);  // the slot's previous activations have left
        ctx_.to_next.post_sends(rank, stage_.output(slot), row, activation_tag(i), MPI_COMM_WORLD,
                                activation_sends_[slot]);
        trace.add(SpanKind::comm_wait, i, t0);
        break;
      case ActionKind::backward: {
        // The last backward reports finished units, so that their reductions start at once.
        const bool final_backward = i == pipe_.micro_batches - 1;
        stage_.backward(slot, dout_.data(), [&](int unit) {
          if (final_backward) sync_.unit_done(unit, grads);
        });
        backwards_done++;
        trace.add(SpanKind::backward, i, t0);
        break;
      }
      case ActionKind::send_grad: {
        wait_all(grad_sends_[slot]);
        float* out = grad_send_.data() + static_cast<size_t>(slot) * stage_.micro_batch() * row;
        backend_.copy(out, stage_.input_grad(), sizeof(float) * stage_.micro_batch() * row);
        ctx_.grads_to_previous.post_sends(rank, out, row, grad_tag(i), MPI_COMM_WORLD, grad_sends_[slot]);
        trace.add(SpanKind::comm_wait, i, t0);
        break;
      }
      case ActionKind::reduce_grads:
        sync_.finish(grads);
        for (auto& r : activation_sends_) wait_all(r);
        for (auto& r : grad_sends_) wait_all(r);
        trace.add(SpanKind::reduce, -1, t0);
        break;
      case ActionKind::optimizer_step: {
        // Every rank learns the global loss (from the last stages) and norm (each block once).
        double sums[2] = {last ? loss_sum : 0.0, sync_.owned_sum_of_squares(backend_, grads)};
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        result.loss = sums[0] / plan_.global_batch;
        result.grad_norm = std::sqrt(sums[1]) / plan_.global_batch;
        result.applied = std::isfinite(result.loss) && std::isfinite(result.grad_norm);
        if (result.applied) {
          const double scale = clip_factor(result.grad_norm, optimizer_.config().max_grad_norm) / plan_.global_batch;
          optimizer_.step(stage_.params(), grads, lr, static_cast<float>(scale));
        }
        trace.add(SpanKind::optimizer, -1, t0);
        break;
      }
    }
    post_ready_receives(index + 1);
  }
  trace.end_step();
  return result;
}

void PipelineRuntime::forward_only(int tag, const int32_t* inputs, const int32_t* targets, double& loss_sum) {
  const size_t row = static_cast<size_t>(T_) * C_;
  std::vector<MPI_Request> requests;
  if (!ctx_.first_stage()) {
    ctx_.from_previous.post_recvs(ctx_.world_rank, stage_.input_buffer(0), row, tag, MPI_COMM_WORLD, requests);
    wait_all(requests);
  }
  stage_.forward(0, inputs, ctx_.first_stage() ? nullptr : stage_.input_buffer(0));
  if (ctx_.last_stage()) {
    loss_sum += stage_.loss(0, targets, false);
  } else {
    ctx_.to_next.post_sends(ctx_.world_rank, stage_.output(0), row, tag, MPI_COMM_WORLD, requests);
    wait_all(requests);
  }
}

double PipelineRuntime::evaluate(SampleStream& val, int samples) {
  // Pipeline p evaluates whole micro-batches of its batch share of `samples`, on consecutive
  // windows after those of the pipelines before it.
  uint64_t first = 0, mine_first = 0;
  int mine = 0;
  double total = 0;
  for (size_t p = 0; p < plan_.pipelines.size(); p++) {
    const PlanPipeline& pipe = plan_.pipelines[p];
    const int share = static_cast<int>(static_cast<int64_t>(samples) * pipe.samples() / plan_.global_batch);
    const int batches = std::max(1, share / pipe.micro_batch);
    if (static_cast<int>(p) == ctx_.role.pipeline) {
      mine = batches;
      mine_first = first;
    }
    first += static_cast<uint64_t>(batches) * pipe.micro_batch;
  }
  total = static_cast<double>(first);
  double loss_sum = 0.0;
  for (int i = 0; i < mine; i++) {
    fetch(val, mine_first + static_cast<uint64_t>(i) * pipe_.micro_batch + ctx_.role.sample_offset, inputs_, targets_);
    forward_only(activation_tag(i), inputs_.data(), targets_.data(), loss_sum);
  }
  double sum = ctx_.last_stage() ? loss_sum : 0.0;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  return sum / total;
}

void PipelineRuntime::gather_parameters(float* full) {
  std::vector<float> host;
  for (size_t i = 0; i < whole_.tensors().size(); i++) {
    const ParamTensor& t = whole_.tensors()[i];
    const int owner = owners_[i], tag = static_cast<int>(i);
    if (owner == ctx_.world_rank) {
      host.resize(t.size);
      backend_.copy_to_host(host.data(), stage_.params() + find_tensor(stage_.layout(), t.name)->offset, t.size * sizeof(float));
      if (owner == 0) std::copy(host.begin(), host.end(), full + t.offset);
      else MPI_CHECK(MPI_Send(host.data(), static_cast<int>(t.size), MPI_FLOAT, 0, tag, MPI_COMM_WORLD));
    } else if (ctx_.world_rank == 0) {
      MPI_CHECK(MPI_Recv(full + t.offset, static_cast<int>(t.size), MPI_FLOAT, owner, tag, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
    }
  }
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

void PipelineRuntime::save_checkpoint(const std::string& path, const CheckpointHeader& header) {
  CheckpointWriter writer(path, model_, header, MPI_COMM_WORLD);
  std::vector<float> host;
  for (size_t i = 0; i < whole_.tensors().size(); i++) {
    if (owners_[i] != ctx_.world_rank) continue;
    const ParamTensor& t = whole_.tensors()[i];
    const size_t offset = find_tensor(stage_.layout(), t.name)->offset;
    host.resize(t.size);
    for (CheckpointGroup g : {CheckpointGroup::params, CheckpointGroup::adam_m, CheckpointGroup::adam_v}) {
      backend_.copy_to_host(host.data(), state_buffer(g) + offset, t.size * sizeof(float));
      writer.write(g, t, host.data());
    }
  }
}

CheckpointHeader PipelineRuntime::load_checkpoint(const std::string& path) {
  CheckpointReader reader(path, model_);
  std::vector<float> host;
  for (const ParamTensor& t : stage_.layout().tensors()) {  // the tied head copy of wte reads "wte" too
    host.resize(t.size);
    for (CheckpointGroup g : {CheckpointGroup::params, CheckpointGroup::adam_m, CheckpointGroup::adam_v}) {
      reader.read(g, t, host.data());
      backend_.copy_to_device(state_buffer(g) + t.offset, host.data(), t.size * sizeof(float));
    }
  }
  optimizer_.set_steps_taken(reader.header().step);
  return reader.header();
}

}  // namespace eth

#include "lib/runtime/stage_transfers.hpp"

#include "mpi_topology/host_messages.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth {
namespace {

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

}  // namespace

StageTransfers::StageTransfers(const ParallelContext& ctx, const PlanPipeline& pipe, const std::vector<Action>& actions,
                               Stage& stage, int slots, kernels::Backend& backend, int T)
    : ctx_(ctx),
      pipe_(pipe),
      actions_(actions),
      stage_(stage),
      backend_(backend),
      row_(static_cast<size_t>(T) * stage.config().channels),
      slots_(slots) {
  const size_t rows = static_cast<size_t>(ctx.role.samples) * row_;  // one micro-batch of this rank's activations
  dout_ = kernels::DeviceBuffer<float>(backend, rows);
  grad_send_ = kernels::DeviceBuffer<float>(backend, rows * slots_);
  const bool direct = mpi_reads_device_buffers(backend, MpiTraffic::point_to_point);
  for (int slot = 0; slot < slots_; slot++) {
    if (!ctx.first_stage()) {
      input_wires_.emplace_back(backend, stage.input_buffer(slot), rows, direct);
      grad_send_wires_.emplace_back(backend, grad_send_.data() + rows * slot, rows, direct);
      grad_final_.emplace_back(backend);
    }
    if (!ctx.last_stage()) {
      output_wires_.emplace_back(backend, stage.output(slot), rows, direct);
      output_final_.emplace_back(backend);
    }
  }
  if (!ctx.last_stage()) dout_wire_ = WireBuffer(backend, dout_.data(), rows, direct);
  for (int i = 0; i < pipe.micro_batches; i++) backward_done_.emplace_back(backend);
  activation_sends_.resize(static_cast<size_t>(slots_));
  grad_sends_.resize(static_cast<size_t>(slots_));
}

const ParallelContext::Exchanges& StageTransfers::exchanges(int micro_batch) const {
  return ctx_.exchanges(pipe_.rows(micro_batch) < pipe_.micro_batch);
}

void StageTransfers::begin_step() {
  receives_.assign(actions_.size(), {});
  posted_.assign(actions_.size(), false);
  backwards_enqueued_ = 0;
}

bool StageTransfers::buffer_free(const Action& r) const {
  const int k = r.posted_after_backward;
  return k < 0 || (k < backwards_enqueued_ && backward_done_[k].done());
}

void StageTransfers::post_receive(size_t index) {
  const Action& r = actions_[index];
  const ParallelContext::Exchanges& x = exchanges(r.micro_batch);
  if (r.kind == ActionKind::recv_activation) {
    x.from_previous.post_recvs(ctx_.world_rank, input_wires_[r.micro_batch % slots_].wire(), row_,
                               activation_tag(r.micro_batch), world_comm(), receives_[index]);
  } else {
    x.grads_from_next.post_recvs(ctx_.world_rank, dout_wire_.wire(), row_, grad_tag(r.micro_batch), world_comm(),
                                 receives_[index]);
  }
  posted_[index] = true;
}

void StageTransfers::receive(size_t index) {
  const Action& a = actions_[index];
  const int i = a.micro_batch, rank = ctx_.world_rank;
  if (!posted_[index]) {
    if (a.posted_after_backward >= 0) backward_done_[a.posted_after_backward].wait();
    post_receive(index);
  }
  if (a.kind == ActionKind::recv_activation) {
    wait_all(receives_[index], receiving("activations", i, exchanges(i).from_previous.senders_to(rank)));
    input_wires_[i % slots_].stage_in();
  } else {
    wait_all(receives_[index], receiving("gradients", i, exchanges(i).grads_from_next.senders_to(rank)));
    dout_wire_.stage_in();
  }
}

void StageTransfers::post_ready_receives(size_t from) {
  for (ActionKind kind : {ActionKind::recv_activation, ActionKind::recv_grad}) {
    for (size_t j = from; j < actions_.size(); j++) {
      if (actions_[j].kind != kind) continue;
      if (!posted_[j] && buffer_free(actions_[j])) post_receive(j);
      break;  // only the next receive of each kind
    }
  }
}

void StageTransfers::send_rows(const RowExchange& exchange, WireBuffer& wire, kernels::Event& ready, int tag,
                               std::vector<MPI_Request>& requests) {
  wire.stage_out();
  ready.record();
  ready.wait();  // MPI reads the rows from the host's side of the stream
  exchange.post_sends(ctx_.world_rank, wire.wire(), row_, tag, world_comm(), requests);
}

void StageTransfers::wait_slot_sent(const Action& a) {
  if (a.after_send_of < 0) return;
  wait_all(activation_sends_[a.micro_batch % slots_],
           sending("activations", a.after_send_of, exchanges(a.after_send_of).to_next.receivers_from(ctx_.world_rank)));
}

void StageTransfers::send_activations(int i) {
  const int slot = i % slots_;
  send_rows(exchanges(i).to_next, output_wires_[slot], output_final_[slot], activation_tag(i), activation_sends_[slot]);
}

void StageTransfers::backward_enqueued(int i) {
  backward_done_[i].record();
  backwards_enqueued_++;
}

void StageTransfers::send_grads(const Action& a, const float* input_grad, int rows) {
  const int i = a.micro_batch, slot = i % slots_;
  if (a.after_send_of >= 0)  // the slot's previous gradient has left
    wait_all(grad_sends_[slot], sending("gradients", a.after_send_of,
                                        exchanges(a.after_send_of).grads_to_previous.receivers_from(ctx_.world_rank)));
  WireBuffer& wire = grad_send_wires_[slot];
  backend_.copy(wire.buffer(), input_grad, sizeof(float) * rows * row_);
  send_rows(exchanges(i).grads_to_previous, wire, grad_final_[slot], grad_tag(i), grad_sends_[slot]);
}

void StageTransfers::finish_sends() {
  const int rank = ctx_.world_rank;
  if (!ctx_.last_stage())
    for (auto& r : activation_sends_) wait_all(r, {"the step's last sends of activations", ctx_.full.to_next.receivers_from(rank)});
  if (!ctx_.first_stage())
    for (auto& r : grad_sends_)
      wait_all(r, {"the step's last sends of gradients", ctx_.full.grads_to_previous.receivers_from(rank)});
}

void StageTransfers::receive_evaluation(int i) {
  std::vector<MPI_Request> requests;
  ctx_.full.from_previous.post_recvs(ctx_.world_rank, input_wires_[0].wire(), row_, activation_tag(i), world_comm(), requests);
  wait_all(requests, {"receive of validation activations", ctx_.full.from_previous.senders_to(ctx_.world_rank)});
  input_wires_[0].stage_in();
}

void StageTransfers::send_evaluation(int i) {
  std::vector<MPI_Request> requests;
  send_rows(ctx_.full.to_next, output_wires_[0], output_final_[0], activation_tag(i), requests);
  wait_all(requests, {"send of validation activations", ctx_.full.to_next.receivers_from(ctx_.world_rank)});
}

}  // namespace eth

#include "lib/runtime/stage_transfers.hpp"

#include <cassert>
#include <cstdio>
#include <thread>

#include "mpi_topology/host_messages.hpp"
#include "mpi_topology/mpi_counts.hpp"
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
                               Stage& stage, int slots, kernels::Backend& backend, int T,
                               std::unique_ptr<StreamCollectives> streams, bool direct)
    : ctx_(ctx),
      pipe_(pipe),
      actions_(actions),
      stage_(stage),
      backend_(backend),
      row_(static_cast<size_t>(T) * stage.config().channels * wire_words(kernels::element_bytes(stage.storage()))),
      slots_(slots),
      streams_(std::move(streams)) {
  const size_t rows = static_cast<size_t>(ctx.role.samples) * row_;  // one micro-batch of this rank's activations
  dout_ = kernels::DeviceBuffer<WireWord>(backend, rows);
  grad_send_ = kernels::DeviceBuffer<WireWord>(backend, rows * slots_);
  auto words = [](kernels::Tensor t) { return static_cast<WireWord*>(t.data()); };
  for (int slot = 0; slot < slots_; slot++) {
    if (!ctx.first_stage()) {
      input_wires_.emplace_back(backend, words(stage.input_buffer(slot)), rows, direct);
      grad_send_wires_.emplace_back(backend, grad_send_.data() + rows * slot, rows, direct);
      grad_final_.emplace_back(backend);
    }
    if (!ctx.last_stage()) {
      output_wires_.emplace_back(backend, words(stage.output(slot)), rows, direct);
      output_final_.emplace_back(backend);
    }
  }
  if (!ctx.last_stage()) dout_wire_ = Wire(backend, dout_.data(), rows, direct);
  if (receives_foreign_rows()) {
    saturated_ = kernels::DeviceBuffer<unsigned>(backend, 1);
    const unsigned zero = 0;
    backend.copy_to_device(saturated_.data(), &zero, sizeof zero);
  }
  for (int i = 0; i < pipe.micro_batches; i++) backward_done_.emplace_back(backend);
  activation_sends_.resize(static_cast<size_t>(slots_));
  grad_sends_.resize(static_cast<size_t>(slots_));
  if (streams_) make_lanes();
}

void StageTransfers::make_lanes() {
  StreamCollectives& s = *streams_;
  // Boundaries in pipeline order on every rank (StreamLink::create): the one before this stage,
  // then the one after it; activations' link first.
  auto lane = [&](const RowExchange& exchange) {
    return Lane{s.new_stream(), StreamLink::create(exchange, ctx_.node_of_rank, ctx_.world_rank, s)};
  };
  if (!ctx_.first_stage()) {
    activations_in_ = lane(ctx_.full.from_previous);
    grads_out_ = lane(ctx_.full.grads_to_previous);
  }
  if (!ctx_.last_stage()) {
    activations_out_ = lane(ctx_.full.to_next);
    grads_in_ = lane(ctx_.full.grads_from_next);
  }
  copies_ = s.new_stream();
  rows_final_ = s.new_event();
  staged_ = s.new_event();
  for (int slot = 0; slot < slots_; slot++) {
    activation_sent_.push_back(s.new_event());
    grad_sent_.push_back(s.new_event());
  }
  for (size_t i = 0; i < actions_.size(); i++) received_.push_back(s.new_event());
}

const ParallelContext::Exchanges& StageTransfers::exchanges(int micro_batch) const {
  return ctx_.exchanges(pipe_.rows(micro_batch) < pipe_.micro_batch);
}

std::string StageTransfers::path() const {
  if (!streams_) return "MPI";
  return streams_->name() + " send/receive inside each node, device to device; MPI across nodes";
}

void StageTransfers::begin_step() {
  receives_.assign(actions_.size(), {});
  posted_.assign(actions_.size(), false);
  backwards_enqueued_ = 0;
  step_bytes_sent_ = 0;
}

bool StageTransfers::buffer_free(const Action& r) const {
  const int k = r.posted_after_backward;
  return k < 0 || (k < backwards_enqueued_ && backward_done_[k].done());
}

void StageTransfers::post_receive(size_t index) {
  const Action& r = actions_[index];
  const ParallelContext::Exchanges& x = exchanges(r.micro_batch);
  StreamCollectives::Event* done = streams_ ? received_[index] : nullptr;
  if (r.kind == ActionKind::recv_activation)
    post_receives(x.from_previous, input_wires_[r.micro_batch % slots_], activations_in_, activation_tag(r.micro_batch),
                  done, receives_[index]);
  else
    post_receives(x.grads_from_next, dout_wire_, grads_in_, grad_tag(r.micro_batch), done, receives_[index]);
  posted_[index] = true;
}

void StageTransfers::post_receives(const RowExchange& exchange, Wire& wire, const Lane& lane, int tag,
                                   StreamCollectives::Event* done, Pending& pending) {
  if (!streams_) return exchange.post_recvs(ctx_.world_rank, wire.wire(), row_, tag, world_comm(), pending.requests);
  bool grouped = false;
  for (const RowMessage& m : exchange.receives_of(ctx_.world_rank, row_)) {
    if (!lane.link.carries(m.peer)) {
      large_irecv(wire.wire() + m.offset, m.count, wire_word_type(), m.peer, tag, world_comm(), pending.requests);
      continue;
    }
    if (!grouped) streams_->group_start();
    grouped = true;
    streams_->recv(wire.buffer() + m.offset, m.count, lane.link.peer_rank(m.peer), lane.link.comm(), lane.stream);
  }
  if (!grouped) return;
  streams_->group_end();
  streams_->record(done, lane.stream);
  pending.event = done;
}

void StageTransfers::land(const RowExchange& exchange, Wire& wire, const Lane& lane, Pending& pending) {
  if (!streams_) return wire.stage_in();
  if (pending.event != nullptr) streams_->wait(StreamCollectives::kCompute, pending.event);
  pending.event = nullptr;
  if (wire.wire() == wire.buffer()) return;  // MPI wrote the buffer itself
  bool copied = false;
  for (const RowMessage& m : exchange.receives_of(ctx_.world_rank, row_)) {
    if (lane.link.carries(m.peer)) continue;
    streams_->copy(wire.buffer() + m.offset, wire.wire() + m.offset, m.count * sizeof(WireWord), copies_);
    copied = true;
  }
  if (!copied) return;
  streams_->record(staged_, copies_);
  streams_->wait(StreamCollectives::kCompute, staged_);
}

bool StageTransfers::receives_foreign_rows() const {
  const kernels::ElementType mine = stage_.storage();
  for (const RowExchange* exchange : {&ctx_.full.from_previous, &ctx_.full.grads_from_next, &ctx_.last.from_previous,
                                      &ctx_.last.grads_from_next})
    for (int sender : exchange->senders_to(ctx_.world_rank))
      if (ctx_.storage_of_rank[static_cast<size_t>(sender)] != mine) return true;
  return false;
}

void StageTransfers::convert_arrived(const RowExchange& exchange, Wire& wire, bool activations) {
  if (saturated_.size() == 0) return;  // every sender stores this stage's format
  const kernels::ElementType mine = stage_.storage();
  for (const RowMessage& m : exchange.receives_of(ctx_.world_rank, row_)) {
    const kernels::ElementType theirs = ctx_.storage_of_rank[static_cast<size_t>(m.peer)];
    if (theirs == mine) continue;
    // One width on both sides (a job stores 16 bits throughout or fp32 throughout): a word is an element.
    assert(kernels::element_bytes(theirs) == sizeof(WireWord) && kernels::element_bytes(mine) == sizeof(WireWord));
    const kernels::Tensor rows(wire.buffer() + m.offset, mine);
    const kernels::ConstTensor arrived(wire.buffer() + m.offset, theirs);
    if (activations)
      backend_.convert_saturating(rows, arrived, m.count, saturated_.data());
    else
      backend_.convert(rows, arrived, m.count);
  }
}

unsigned StageTransfers::take_saturated() {
  if (saturated_.size() == 0) return 0;
  unsigned count = 0;
  backend_.copy_to_host(&count, saturated_.data(), sizeof count);
  if (count == 0) return 0;
  const unsigned zero = 0;
  backend_.copy_to_device(saturated_.data(), &zero, sizeof zero);
  return count;
}

void StageTransfers::wait(Pending& pending, const WaitSite& site) {
  if (!streams_) return wait_all(pending.requests, site);
  watched_wait([&] {
    int complete = 0;
    MPI_CHECK(MPI_Testall(static_cast<int>(pending.requests.size()), pending.requests.data(), &complete,
                          MPI_STATUSES_IGNORE));
    if (const std::string error = streams_->async_error(); !error.empty()) fail_transfer(site, error);
    if (complete && (pending.event == nullptr || streams_->done(pending.event))) return true;
    std::this_thread::yield();  // the streams' own threads, where they are emulated, need the core
    return false;
  }, site);
  pending.requests.clear();
}

void StageTransfers::fail_transfer(const WaitSite& site, const std::string& error) {
  std::fprintf(stderr, "eth_train: rank %d (%s): %s failed: %s\n", ctx_.world_rank, progress_text().c_str(),
               site.what.c_str(), error.c_str());
  std::fflush(stderr);
  streams_->abort();
  MPI_Abort(world_comm(), 1);
}

void StageTransfers::receive(size_t index) {
  const Action& a = actions_[index];
  const int i = a.micro_batch, rank = ctx_.world_rank;
  if (!posted_[index]) {
    if (a.posted_after_backward >= 0) backward_done_[a.posted_after_backward].wait();
    post_receive(index);
  }
  const ParallelContext::Exchanges& x = exchanges(i);
  if (a.kind == ActionKind::recv_activation) {
    wait(receives_[index], receiving("activations", i, x.from_previous.senders_to(rank)));
    land(x.from_previous, input_wires_[i % slots_], activations_in_, receives_[index]);
    convert_arrived(x.from_previous, input_wires_[i % slots_], true);
  } else {
    wait(receives_[index], receiving("gradients", i, x.grads_from_next.senders_to(rank)));
    land(x.grads_from_next, dout_wire_, grads_in_, receives_[index]);
    convert_arrived(x.grads_from_next, dout_wire_, false);
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

void StageTransfers::send_rows(const RowExchange& exchange, Wire& wire, kernels::Event& ready, const Lane& lane,
                               int tag, StreamCollectives::Event* done, Pending& pending) {
  const std::vector<RowMessage> messages = exchange.sends_of(ctx_.world_rank, row_);
  for (const RowMessage& m : messages) step_bytes_sent_ += double(m.count * sizeof(WireWord));
  if (!streams_) return send_rows_through_mpi(exchange, wire, ready, tag, pending.requests);
  streams_->record(rows_final_, StreamCollectives::kCompute);  // the tensor's event
  bool grouped = false, remote = false;
  for (const RowMessage& m : messages) {
    if (!lane.link.carries(m.peer)) {
      remote = true;
      continue;
    }
    if (!grouped) {
      streams_->wait(lane.stream, rows_final_);
      streams_->group_start();
    }
    grouped = true;
    streams_->send(wire.buffer() + m.offset, m.count, lane.link.peer_rank(m.peer), lane.link.comm(), lane.stream);
  }
  if (grouped) {
    streams_->group_end();
    streams_->record(done, lane.stream);
    pending.event = done;
  }
  if (!remote) return;
  StreamCollectives::Event* rows_ready = rows_final_;
  if (wire.wire() != wire.buffer()) {  // through the mirror, copied on a stream of its own
    streams_->wait(copies_, rows_final_);
    for (const RowMessage& m : messages)
      if (!lane.link.carries(m.peer))
        streams_->copy(wire.wire() + m.offset, wire.buffer() + m.offset, m.count * sizeof(WireWord), copies_);
    streams_->record(staged_, copies_);
    rows_ready = staged_;
  }
  watched_wait([&] { return streams_->done(rows_ready); }, {"copy of rows to send", {}});
  for (const RowMessage& m : messages) {
    if (!lane.link.carries(m.peer))
      large_isend(wire.wire() + m.offset, m.count, wire_word_type(), m.peer, tag, world_comm(), pending.requests);
  }
}

void StageTransfers::send_rows_through_mpi(const RowExchange& exchange, Wire& wire, kernels::Event& ready, int tag,
                                           std::vector<MPI_Request>& requests) {
  wire.stage_out();
  ready.record();
  ready.wait();  // MPI reads the rows from the host's side of the stream
  exchange.post_sends(ctx_.world_rank, wire.wire(), row_, tag, world_comm(), requests);
}

void StageTransfers::wait_slot_sent(const Action& a) {
  if (a.after_send_of < 0) return;
  wait(activation_sends_[a.micro_batch % slots_],
       sending("activations", a.after_send_of, exchanges(a.after_send_of).to_next.receivers_from(ctx_.world_rank)));
}

void StageTransfers::send_activations(int i) {
  const int slot = i % slots_;
  send_rows(exchanges(i).to_next, output_wires_[slot], output_final_[slot], activations_out_, activation_tag(i),
            streams_ ? activation_sent_[slot] : nullptr, activation_sends_[slot]);
}

void StageTransfers::backward_enqueued(int i) {
  backward_done_[i].record();
  backwards_enqueued_++;
}

void StageTransfers::send_grads(const Action& a, kernels::ConstTensor input_grad, int rows) {
  const int i = a.micro_batch, slot = i % slots_;
  if (a.after_send_of >= 0)  // the slot's previous gradient has left
    wait(grad_sends_[slot], sending("gradients", a.after_send_of,
                                    exchanges(a.after_send_of).grads_to_previous.receivers_from(ctx_.world_rank)));
  Wire& wire = grad_send_wires_[slot];
  assert(input_grad.type() == stage_.storage());
  backend_.copy(wire.buffer(), input_grad.data(), sizeof(WireWord) * rows * row_);
  send_rows(exchanges(i).grads_to_previous, wire, grad_final_[slot], grads_out_, grad_tag(i),
            streams_ ? grad_sent_[slot] : nullptr, grad_sends_[slot]);
}

void StageTransfers::finish_sends() {
  const int rank = ctx_.world_rank;
  if (!ctx_.last_stage())
    for (Pending& p : activation_sends_) wait(p, {"the step's last sends of activations", ctx_.full.to_next.receivers_from(rank)});
  if (!ctx_.first_stage())
    for (Pending& p : grad_sends_)
      wait(p, {"the step's last sends of gradients", ctx_.full.grads_to_previous.receivers_from(rank)});
  for (Pending& p : activation_sends_) p.event = nullptr;
  for (Pending& p : grad_sends_) p.event = nullptr;
}

void StageTransfers::receive_evaluation(int i) {
  std::vector<MPI_Request> requests;
  ctx_.full.from_previous.post_recvs(ctx_.world_rank, input_wires_[0].wire(), row_, activation_tag(i), world_comm(), requests);
  wait_all(requests, {"receive of validation activations", ctx_.full.from_previous.senders_to(ctx_.world_rank)});
  input_wires_[0].stage_in();
  convert_arrived(ctx_.full.from_previous, input_wires_[0], true);
}

void StageTransfers::send_evaluation(int i) {
  std::vector<MPI_Request> requests;
  send_rows_through_mpi(ctx_.full.to_next, output_wires_[0], output_final_[0], activation_tag(i), requests);
  wait_all(requests, {"send of validation activations", ctx_.full.to_next.receivers_from(ctx_.world_rank)});
}

}  // namespace eth

// A stage's point-to-point transfers in a step: the buffers activations and gradients travel
// through, as MPI sees them (mpi_topology/wire_buffer.hpp), the MPI requests in flight, and the
// schedule's buffer rules (lib/plan/schedule.hpp) that say when each may be reused.
//
// Receives are posted as early as the rules allow, so that transfers overlap compute: once the
// backward that frees the buffer has completed on the device. A send starts after an event
// recorded once its rows are final; a slot is overwritten once its last send has completed.
// Message tags: micro-batch i's activations travel as 2i, its gradients as 2i + 1. Messages
// between two ranks with one tag never overtake each other, so steps need no tag of their own.
// Rows travel in 16-bit words (mpi_topology/wire_word.hpp), as the stage stores them: a bf16
// stage's messages are half an fp32 one's. Between a bf16 and an fp16 stage (--precision auto on
// a mixed cluster, ParallelContext::storage_of_rank) rows travel in the sender's format and are
// converted in place on arrival: fp16 to bf16 rounds (bf16's range holds fp16's); bf16
// activations past fp16's range saturate at +-65504 and are counted (saturated()), since a value
// an fp16 stage cannot hold is better clamped than infinite in every later layer; bf16 gradients
// past it become infinite, an overflow the loss scale skips and halves (lib/model/loss_scale.hpp),
// as it would had the fp16 stage computed them.
//
// Two paths, chosen per job with the gradient sums' (mpi_topology/sum_reducer.hpp):
//   - MPI: every message through MPI, from the buffers or their pinned mirrors (the copies on the
//     compute stream; a send waits on the host for the event after its rows);
//   - streams (the NCCL path, given `streams`): a message between two ranks of one node is a
//     send and a receive on streams of their own, one per direction and kind (activations out,
//     activations in, gradients out, gradients in), device memory to device memory, each
//     micro-batch's messages grouped; a send waits on its tensor's event, on its stream, and the
//     host does not wait for it. Messages to or from another node stay on MPI, through the
//     mirrors where MPI cannot read device memory, with the copies on a stream of their own.
//     The host waits for receives (and, before reusing a slot, for sends) through the watchdog.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/device_buffer.hpp"
#include "lib/model/stage.hpp"
#include "lib/plan/schedule.hpp"
#include "lib/runtime/parallel_context.hpp"
#include "mpi_topology/stream_collectives.hpp"
#include "mpi_topology/stream_link.hpp"
#include "mpi_topology/watchdog.hpp"
#include "mpi_topology/wire_buffer.hpp"

namespace eth {

class StageTransfers {
 public:
  // `actions`: this rank's step (one_f_one_b), whose receives and buffer rules this follows;
  // activations arrive in and leave from `stage`'s `slots` slots.
  // `streams`: the NCCL path's, or null for MPI alone. Collective over the pipeline's ranks when
  // given (the node-local communicators of each boundary). `direct`: MPI's sends and receives
  // take the backend's buffers as they are (CommChoice::sends_read_device_buffers), else they go
  // through pinned mirrors.
  StageTransfers(const ParallelContext& ctx, const PlanPipeline& pipe, const std::vector<Action>& actions, Stage& stage,
                 int slots, kernels::Backend& backend, int T, std::unique_ptr<StreamCollectives> streams, bool direct);

  void begin_step();
  // A receive action (actions[index]): posts it if not yet posted, waits for it, and stages its
  // rows in, so that later work on the stream sees them.
  void receive(size_t index);
  // Posts the next receive of each kind after actions[from - 1] whose buffer is free.
  void post_ready_receives(size_t from);
  // Before a forward (`a`) writes its slot: the slot's earlier output has left.
  void wait_slot_sent(const Action& a);
  // After forward i: its slot's output (the stage's output) to the next stage.
  void send_activations(int i);
  // Backward i has been enqueued: its buffers free once it completes on the device.
  void backward_enqueued(int i);
  // After backward `a`: the gradient of its `rows` input samples (`input_grad`, (rows, T, C)) to
  // the previous stage, once the slot's previous gradient has left.
  void send_grads(const Action& a, kernels::ConstTensor input_grad, int rows);
  // The step's last sends have completed (their buffers are rewritten next step).
  void finish_sends();
  kernels::ConstTensor grad_from_next() const { return {dout_.data(), stage_.storage()}; }  // (B, T, C)
  std::string path() const;  // for the log
  // Bytes this rank has sent to the stages before and after it in this step (activations and
  // gradients), counted per message as posted.
  double step_bytes_sent() const { return step_bytes_sent_; }
  // Activation values that saturated on arrival since the last call (waits for queued work
  // where this rank receives from the other 16-bit format; 0 elsewhere).
  unsigned take_saturated();

  // Evaluation (forward only, slot 0, every micro-batch full): micro-batch i's input received,
  // its output sent, each waited for before returning.
  void receive_evaluation(int i);
  void send_evaluation(int i);

 private:
  using Stream = StreamCollectives::Stream;
  using Wire = WireBuffer<WireWord>;
  // One direction of one kind of message on the stream path: its stream and its node-local link.
  struct Lane {
    Stream stream = StreamCollectives::kCompute;
    StreamLink link;
  };
  // Transfers in flight: MPI's requests, and on the stream path the event after the grouped
  // stream operations (null: none).
  struct Pending {
    std::vector<MPI_Request> requests;
    StreamCollectives::Event* event = nullptr;
  };

  const ParallelContext::Exchanges& exchanges(int micro_batch) const;
  bool buffer_free(const Action& receive) const;
  void post_receive(size_t index);
  // Posts the receives of `exchange` into `wire`'s buffer (or mirror), on `lane` where it carries them.
  void post_receives(const RowExchange& exchange, Wire& wire, const Lane& lane, int tag,
                     StreamCollectives::Event* done, Pending& pending);
  // After the wait: later work on the compute stream sees the received rows.
  void land(const RowExchange& exchange, Wire& wire, const Lane& lane, Pending& pending);
  // Whether any sender to this rank stores another format than its stage.
  bool receives_foreign_rows() const;
  // After land: the rows of senders of the other 16-bit format converted to this stage's.
  void convert_arrived(const RowExchange& exchange, Wire& wire, bool activations);
  // Enqueues the wire copy, records `ready` after it, waits for it, and posts the sends.
  void send_rows_through_mpi(const RowExchange& exchange, Wire& wire, kernels::Event& ready, int tag,
                             std::vector<MPI_Request>& requests);
  // The rows in `wire` are final once the work enqueued so far completes: sends them.
  void send_rows(const RowExchange& exchange, Wire& wire, kernels::Event& ready, const Lane& lane, int tag,
                 StreamCollectives::Event* done, Pending& pending);
  // Waits through the watchdog; on the stream path polls the streams' asynchronous errors too.
  void wait(Pending& pending, const WaitSite& site);
  [[noreturn]] void fail_transfer(const WaitSite& site, const std::string& error);
  void make_lanes();  // collective over the pipeline's ranks

  const ParallelContext& ctx_;
  const PlanPipeline& pipe_;
  const std::vector<Action>& actions_;
  Stage& stage_;
  kernels::Backend& backend_;
  size_t row_;  // one sample's activations: T * C elements of the stage's storage type, in words
  int slots_;
  double step_bytes_sent_ = 0;

  kernels::DeviceBuffer<WireWord> dout_;       // (B, T, C) gradient from the next stage
  kernels::DeviceBuffer<WireWord> grad_send_;  // (slots, B, T, C) gradients in flight back
  // The same buffers as MPI sees them, per slot where there are several.
  std::vector<Wire> input_wires_, output_wires_, grad_send_wires_;
  Wire dout_wire_;
  // (1) activation values saturated on arrival; read by take_saturated(). Where this stage
  // receives from the other 16-bit format only.
  kernels::DeviceBuffer<unsigned> saturated_;
  std::vector<kernels::Event> backward_done_;              // per micro-batch
  std::vector<kernels::Event> output_final_, grad_final_;  // per slot: staged, ready to send
  std::vector<Pending> activation_sends_;                  // per slot
  std::vector<Pending> grad_sends_;                        // per slot

  // The stream path (null: MPI alone): lanes, the copies' stream, and events, per slot for
  // sends and per action for receives, made once.
  std::unique_ptr<StreamCollectives> streams_;
  Lane activations_in_, activations_out_, grads_in_, grads_out_;
  Stream copies_ = StreamCollectives::kCompute;
  StreamCollectives::Event *rows_final_ = nullptr, *staged_ = nullptr;
  std::vector<StreamCollectives::Event*> activation_sent_, grad_sent_, received_;

  // This step's receives, per action, and how many backwards have been enqueued.
  std::vector<Pending> receives_;
  std::vector<bool> posted_;
  int backwards_enqueued_ = 0;
};

}  // namespace eth

// A stage's point-to-point transfers in a step: the buffers activations and gradients travel
// through, as MPI sees them (mpi_topology/wire_buffer.hpp), the MPI requests in flight, and the
// schedule's buffer rules (lib/plan/schedule.hpp) that say when each may be reused.
//
// Receives are posted as early as the rules allow, so that transfers overlap compute: once the
// backward that frees the buffer has completed on the device. A send starts after an event
// recorded once its rows are final; a slot is overwritten once its last send has completed.
// Message tags: micro-batch i's activations travel as 2i, its gradients as 2i + 1. Messages
// between two ranks with one tag never overtake each other, so steps need no tag of their own.
#pragma once

#include <mpi.h>

#include <vector>

#include "kernels/backend.hpp"
#include "kernels/device_buffer.hpp"
#include "lib/model/stage.hpp"
#include "lib/plan/schedule.hpp"
#include "lib/runtime/parallel_context.hpp"
#include "mpi_topology/wire_buffer.hpp"

namespace eth {

class StageTransfers {
 public:
  // `actions`: this rank's step (one_f_one_b), whose receives and buffer rules this follows;
  // activations arrive in and leave from `stage`'s `slots` slots.
  StageTransfers(const ParallelContext& ctx, const PlanPipeline& pipe, const std::vector<Action>& actions, Stage& stage,
                 int slots, kernels::Backend& backend, int T);

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
  void send_grads(const Action& a, const float* input_grad, int rows);
  // The step's last sends have completed (their buffers are rewritten next step).
  void finish_sends();
  const float* grad_from_next() const { return dout_.data(); }  // (B, T, C) for the current backward

  // Evaluation (forward only, slot 0, every micro-batch full): micro-batch i's input received,
  // its output sent, each waited for before returning.
  void receive_evaluation(int i);
  void send_evaluation(int i);

 private:
  const ParallelContext::Exchanges& exchanges(int micro_batch) const;
  bool buffer_free(const Action& receive) const;
  void post_receive(size_t index);
  // Enqueues the wire copy, records `ready` after it, waits for it, and posts the sends.
  void send_rows(const RowExchange& exchange, WireBuffer& wire, kernels::Event& ready, int tag,
                 std::vector<MPI_Request>& requests);

  const ParallelContext& ctx_;
  const PlanPipeline& pipe_;
  const std::vector<Action>& actions_;
  Stage& stage_;
  kernels::Backend& backend_;
  size_t row_;  // one sample's activations: T * C floats
  int slots_;

  kernels::DeviceBuffer<float> dout_;       // (B, T, C) gradient from the next stage
  kernels::DeviceBuffer<float> grad_send_;  // (slots, B, T, C) gradients in flight back
  // The same buffers as MPI sees them, per slot where there are several.
  std::vector<WireBuffer> input_wires_, output_wires_, grad_send_wires_;
  WireBuffer dout_wire_;
  std::vector<kernels::Event> backward_done_;              // per micro-batch
  std::vector<kernels::Event> output_final_, grad_final_;  // per slot: staged, ready to send
  std::vector<std::vector<MPI_Request>> activation_sends_; // per slot
  std::vector<std::vector<MPI_Request>> grad_sends_;       // per slot

  // This step's receives, per action, and how many backwards have been enqueued.
  std::vector<std::vector<MPI_Request>> receives_;
  std::vector<bool> posted_;
  int backwards_enqueued_ = 0;
};

}  // namespace eth

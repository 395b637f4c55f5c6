// The 1F1B pipeline schedule as data: a pure function from (plan, rank) to the ordered actions
// that rank performs in one training step. The runtime executes the list, the simulator times
// it with the cost model, and unit tests check it without MPI: what a step does is written once.
//
// Stage s of S with m micro-batches runs w = min(S - s - 1, m) warm-up forwards, then m - w
// steady pairs (forward of micro-batch w + i, backward of i), then w cool-down backwards. It
// keeps at most min(S - s, m) micro-batches' activations (activation_slots), micro-batch i in
// slot i mod activation_slots.
//
// The list also carries the rules for the buffers that transfers use, so that the runtime obeys
// them, the simulator charges them and tests check them in one place:
//   - micro-batch i's activations are received into its slot, whose previous user is
//     micro-batch i - slots: the receive may be posted once that backward has completed;
//   - its gradient is received into the one gradient buffer, read by backward i - 1;
//   - a forward writes its slot's output, which the activation send of micro-batch i - slots
//     reads: that send must have completed first; likewise a gradient send's slot.
#pragma once

#include <string>
#include <vector>

#include "lib/plan/plan.hpp"

namespace eth {

enum class ActionKind {
  recv_activation,  // from the previous stage, before forward
  forward,
  send_activation,  // to the next stage, after forward
  recv_grad,        // from the next stage, before backward
  backward,
  send_grad,        // to the previous stage, after backward
  reduce_grads,     // block-wise gradient reduction, tied embedding included
  optimizer_step,
};

struct Action {
  ActionKind kind;
  int micro_batch = -1;  // -1 for reduce_grads and optimizer_step
  // Receives: the micro-batch whose backward must have completed before the receive may be
  // posted (its buffer is free then); -1: free from the step's start.
  int posted_after_backward = -1;
  // forward and send_grad: the micro-batch whose send from the same slot must have completed
  // before this action overwrites the slot; -1: none.
  int after_send_of = -1;
};

// Micro-batches in flight at stage s of S with m micro-batches: min(S - s, m).
int activation_slots(int stage, int stages, int micro_batches);

// The actions of stage `stage` of `pipeline` in one step.
std::vector<Action> one_f_one_b(const PlanPipeline& pipeline, int stage);

std::string to_string(ActionKind kind);

}  // namespace eth

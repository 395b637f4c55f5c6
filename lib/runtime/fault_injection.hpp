// Fault injection, for tests and benchmarks of fault handling (docs/usage.md, "Injecting
// faults"): `eth_train --inject-fault SPEC` makes one rank fail in one way at one step. SPEC is
//
//   KIND:rank=R:step=S[:phase=P][:block=B]
//
//   abort           rank R aborts in phase P of step S: one line naming rank, step and phase, then
//                   MPI_Abort (what eth_train does with an error one rank meets alone)
//   kill            rank R says so in one line, then SIGKILLs itself in phase P of step S
//   hang            rank R stops taking part in phase P of step S: it sleeps until it is killed,
//                   and the others' collective watchdog (mpi_topology/watchdog.hpp) ends the job
//   nan             a NaN into block B's gradient on rank R, before step S's reduction; the
//                   non-finite norm stops the run before the update, naming step and block
//   overflow        an infinity there instead: what an fp16 gradient past 65504 leaves; with
//                   dynamic loss scaling (fp16) every rank skips the step and halves the scale,
//                   without it the run stops as for nan
//   truncate-shard  rank R cuts the first training shard to half its size at the start of step
//                   S; the data loader's next read past the cut fails, naming the file
//   reverse-sums    rank R starts step S's gradient sums in the reverse of the global order
//                   (block-wise sync): on the NCCL path, whose streams run collectives in the
//                   order issued, a cycle of ranks waiting for each other, which the watchdog names
//   lose-micro-batch  rank R's first micro-batch of step S adds nothing to its parameter
//                   gradients (they are zeroed before the second backward): the silent kind of
//                   fault, a lost micro-batch, that nothing but a comparison against one rank
//                   catches; the equivalence tests show that their bound does (tests/mpi)
//
// P (abort, kill, hang): forward, backward, reduction (before this rank's gradient sums
// complete) or checkpoint (the checkpoint written after step S, between this rank's dataset
// writes). S counts from 1, as the log does. This file is the only place that decides which
// rank fails on purpose; the runtime calls its fault points, which do nothing unless armed.
#pragma once

#include <optional>
#include <string>

namespace eth {

enum class FaultKind { abort, kill, hang, nan, overflow, truncate_shard, reverse_sums, lose_micro_batch };
enum class FaultPhase { none, forward, backward, reduction, checkpoint };

struct FaultSpec {
  FaultKind kind = FaultKind::abort;
  int rank = 0;
  int step = 1;                        // 1-based
  FaultPhase phase = FaultPhase::none;  // abort, kill, hang
  int block = -1;                       // nan, overflow: the gradient block (ParallelContext::blocks index)
};

// An InputError naming --inject-fault and the expected grammar otherwise.
FaultSpec parse_fault(const std::string& text);

// Arms `spec` in this process, which is rank `rank`; nothing fires on other ranks.
void arm_fault(const std::optional<FaultSpec>& spec, int rank);

// Phase `phase` of step `step` (0-based, as the training loop counts) has been reached on this
// rank: an armed abort throws, kill and hang act, here and only here.
void fault_point(FaultPhase phase, int step);
// The gradient block this rank poisons in step `step` (0-based), and with what (a NaN, or an
// infinity for overflow); block -1: none.
struct GradientPoison {
  int block = -1;
  float value = 0;
};
GradientPoison fault_gradient_poison(int step);
// Whether this rank starts step `step`'s (0-based) gradient sums in reverse order.
bool fault_reverse_sums(int step);
// Whether this rank loses its first micro-batch's gradients in step `step` (0-based).
bool fault_lose_micro_batch(int step);
// At the start of step `step` (0-based): cuts `shard` to half its size if armed to.
void fault_truncate_shard(int step, const std::string& shard);

}  // namespace eth

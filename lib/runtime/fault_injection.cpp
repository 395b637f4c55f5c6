#include "lib/runtime/fault_injection.hpp"

#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth {
namespace {

std::optional<FaultSpec> armed;  // on its rank only

const char* kind_name(FaultKind k) {
  switch (k) {
    case FaultKind::abort: return "abort";
    case FaultKind::kill: return "kill";
    case FaultKind::hang: return "hang";
    case FaultKind::nan: return "nan";
    case FaultKind::overflow: return "overflow";
    case FaultKind::truncate_shard: return "truncate-shard";
    case FaultKind::reverse_sums: return "reverse-sums";
    case FaultKind::lose_micro_batch: return "lose-micro-batch";
  }
  return "";
}

const char* phase_name(FaultPhase phase) {
  switch (phase) {
    case FaultPhase::none: return "none";
    case FaultPhase::forward: return "forward";
    case FaultPhase::backward: return "backward";
    case FaultPhase::reduction: return "reduction";
    case FaultPhase::checkpoint: return "checkpoint";
  }
  return "";
}

bool armed_for(FaultKind kind, int step) { return armed && armed->kind == kind && armed->step == step + 1; }

// "injected fault (--inject-fault abort in backward of step 5)": what every fault says.
std::string what(const FaultSpec& f) {
  if (f.phase == FaultPhase::none)
    return strprintf("injected fault (--inject-fault %s at the start of step %d)", kind_name(f.kind), f.step);
  return strprintf("injected fault (--inject-fault %s in %s of step %d)", kind_name(f.kind), phase_name(f.phase), f.step);
}

}  // namespace

FaultSpec parse_fault(const std::string& text) {
  const std::string grammar =
      "KIND:rank=R:step=S[:phase=P][:block=B] with KIND abort, kill or hang (with phase=forward, backward, "
      "reduction or checkpoint), nan (with block=B), truncate-shard, reverse-sums or lose-micro-batch, R >= 0, S >= 1";
  auto bad = [&]() { fail_input("--inject-fault", "value", grammar, text); };
  std::istringstream in(text);
  std::string kind, item;
  std::getline(in, kind, ':');
  FaultSpec f;
  bool have_rank = false, have_step = false;
  if (kind == "abort") f.kind = FaultKind::abort;
  else if (kind == "kill") f.kind = FaultKind::kill;
  else if (kind == "hang") f.kind = FaultKind::hang;
  else if (kind == "nan") f.kind = FaultKind::nan;
  else if (kind == "overflow") f.kind = FaultKind::overflow;
  else if (kind == "truncate-shard") f.kind = FaultKind::truncate_shard;
  else if (kind == "reverse-sums") f.kind = FaultKind::reverse_sums;
  else if (kind == "lose-micro-batch") f.kind = FaultKind::lose_micro_batch;
  else bad();
  while (std::getline(in, item, ':')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) bad();
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    auto number = [&]() {
      size_t used = 0;
      int n = -1;
      try {
        n = std::stoi(value, &used);
      } catch (const std::exception&) {
        bad();
      }
      if (used != value.size() || n < 0) bad();
      return n;
    };
    if (key == "rank") f.rank = number(), have_rank = true;
    else if (key == "step") f.step = number(), have_step = true;
    else if (key == "block") f.block = number();
    else if (key == "phase" && value == "forward") f.phase = FaultPhase::forward;
    else if (key == "phase" && value == "backward") f.phase = FaultPhase::backward;
    else if (key == "phase" && value == "reduction") f.phase = FaultPhase::reduction;
    else if (key == "phase" && value == "checkpoint") f.phase = FaultPhase::checkpoint;
    else bad();
  }
  const bool phased = f.kind == FaultKind::abort || f.kind == FaultKind::kill || f.kind == FaultKind::hang;
  if (!have_rank || !have_step || f.step < 1 || phased != (f.phase != FaultPhase::none) ||
      (f.kind == FaultKind::nan || f.kind == FaultKind::overflow) != (f.block >= 0))
    bad();
  return f;
}

void arm_fault(const std::optional<FaultSpec>& spec, int rank) {
  armed.reset();
  if (spec && spec->rank == rank) armed = spec;
}

void fault_point(FaultPhase phase, int step) {
  if (!armed || armed->phase != phase || armed->step != step + 1) return;
  const FaultSpec f = *armed;
  switch (f.kind) {
    case FaultKind::abort:
      // What eth_train does with an error one rank meets alone, without unwinding first: inside
      // a checkpoint write, unwinding would reach HDF5's collective close, which the other ranks
      // never join.
      std::fprintf(stderr, "eth_train: rank %d: %s: MPI_Abort\n", f.rank, what(f).c_str());
      std::fflush(stderr);
      MPI_Abort(world_comm(), 1);
      break;
    case FaultKind::kill:
      std::fprintf(stderr, "eth_train: rank %d: %s: SIGKILL to itself\n", f.rank, what(f).c_str());
      std::fflush(stderr);
      std::raise(SIGKILL);
      break;
    case FaultKind::hang:
      std::fprintf(stderr, "eth_train: rank %d: %s: stops taking part until it is killed\n", f.rank, what(f).c_str());
      std::fflush(stderr);
      for (;;) pause();  // the preemption handlers' signals return here; SIGKILL ends it
    default:
      break;
  }
}

bool fault_reverse_sums(int step) {
  if (!armed_for(FaultKind::reverse_sums, step)) return false;
  static bool said = false;
  if (!said) std::fprintf(stderr, "eth_train: rank %d: %s: gradient sums started in reverse order\n", armed->rank,
                          what(*armed).c_str());
  said = true;
  return true;
}

bool fault_lose_micro_batch(int step) {
  if (!armed_for(FaultKind::lose_micro_batch, step)) return false;
  std::fprintf(stderr, "eth_train: rank %d: %s: the first micro-batch's gradients lost\n", armed->rank,
               what(*armed).c_str());
  return true;
}

GradientPoison fault_gradient_poison(int step) {
  if (armed_for(FaultKind::nan, step)) return {armed->block, std::nanf("")};
  if (armed_for(FaultKind::overflow, step)) return {armed->block, std::numeric_limits<float>::infinity()};
  return {};
}

void fault_truncate_shard(int step, const std::string& shard) {
  if (!armed_for(FaultKind::truncate_shard, step)) return;
  const auto bytes = std::filesystem::file_size(shard);
  std::fprintf(stderr, "eth_train: rank %d: %s: %s cut from %ju to %ju bytes\n", armed->rank, what(*armed).c_str(),
               shard.c_str(),
               static_cast<uintmax_t>(bytes), static_cast<uintmax_t>(bytes / 2));
  std::fflush(stderr);
  std::filesystem::resize_file(shard, bytes / 2);
}

}  // namespace eth

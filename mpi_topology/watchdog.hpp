// The collective watchdog (docs/design.md, "Watchdog"): every blocking wait of the runtime on a
// collective or a point-to-point transfer goes through watched_wait, which polls the requests
// with MPI_Test* and, when they have not completed within the armed timeout, names what it
// waited for and the ranks that did not arrive, then ends the job with MPI_Abort.
//
// Finding who did not arrive: a rank that waits in watched_wait answers queries on a
// communicator of its own (a duplicate of MPI_COMM_WORLD) with its progress (step, phase) and
// the wait it is in. On expiry the waiting rank asks each rank it waits for and gives them
// kReplyGrace to answer: a rank that answers with the same wait at the same step has arrived;
// one that answers with another wait has not (it is waiting elsewhere, which names the chain);
// one that does not answer is hung, dead, or busy outside a watched wait. A hung rank cannot
// answer by design, so no one-sided (RMA) window is needed, and a live rank answers from the
// loop it already spins in.
//
// The progress record (set_progress) is also what a rank's own error line names.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

namespace eth {

// What a wait is for, in words every rank of the collective builds the same way ("reduction of
// block 1 (layers 1-2)"), and the world ranks whose arrival it needs (empty: every rank).
struct WaitSite {
  std::string what;
  std::vector<int> peers;
};

// Collective over MPI_COMM_WORLD, once per job: arms the watchdog with `seconds` (0: waits never
// expire, and nothing is duplicated).
void arm_watchdog(double seconds);

// This rank's place in the job: its step (1-based, as in the log; 0 before the first) and
// phase ("forward", "checkpoint", ...; a string literal).
void set_progress(int step, const char* phase);
void set_phase(const char* phase);  // the same step
std::string progress_text();  // "step 5, backward"; "start-up" before the first step

// Polls `done` (which tests requests without blocking) until it returns true. Armed: after the
// timeout, one line on stderr naming this rank, `site` and the ranks that did not arrive, then
// MPI_Abort.
void watched_wait(const std::function<bool()>& done, const WaitSite& site);
// The same for requests; clears them.
void watched_wait_all(std::vector<MPI_Request>& requests, const WaitSite& site);
void watched_wait_one(MPI_Request& request, const WaitSite& site);

// While it lives, `hook` runs when a watched wait expires, after the line and before MPI_Abort:
// what must not stay blocked on a peer that will not come (NCCL's communicators) is aborted.
class WatchdogExpiryHook {
 public:
  explicit WatchdogExpiryHook(std::function<void()> hook);
  ~WatchdogExpiryHook();
  WatchdogExpiryHook(const WatchdogExpiryHook&) = delete;
  WatchdogExpiryHook& operator=(const WatchdogExpiryHook&) = delete;

 private:
  std::function<void()> hook_;
};

}  // namespace eth

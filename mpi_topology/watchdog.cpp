#include "mpi_topology/watchdog.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>

#include "mpi_topology/mpi_session.hpp"

namespace eth {
namespace {

using Clock = std::chrono::steady_clock;

// How long an expired wait gives the ranks it waits for to answer. A live rank answers from its
// next wait, so this bounds the compute it may be in between two waits (milliseconds for the
// tiny test models, about a second for a GPT-2 124M stage on a CPU rank).
constexpr double kReplyGrace = 2.0;
// Queries are served, and the deadline checked, at most this often: an MPI_Iprobe on every poll
// would cost more than the poll itself.
constexpr auto kServeEvery = std::chrono::milliseconds(5);
constexpr int kQueryTag = 1, kReplyTag = 2;
constexpr int kAnswerChars = 512;

struct State {
  double timeout_s = 0;
  MPI_Comm comm = MPI_COMM_NULL;  // queries and answers; null: not armed
  int rank = 0, world = 1;
  int step = 0;
  const char* phase = "start-up";
  const WaitSite* waiting = nullptr;  // the wait this rank is in, if any
  std::vector<const std::function<void()>*> expiry_hooks;  // WatchdogExpiryHook's, alive
};
State state;

// "STEP\tPHASE\tWHAT\tPEERS", what a rank says when asked (PEERS: the ranks its wait needs,
// comma-separated; empty when it needs every rank or is in no wait).
std::string answer() {
  std::string text = std::to_string(state.step) + '\t' + state.phase + '\t';
  if (state.waiting) {
    text += state.waiting->what + '\t';
    for (int r : state.waiting->peers) text += std::to_string(r) + ',';
  }
  text.resize(std::min(text.size(), static_cast<size_t>(kAnswerChars - 1)));
  return text;
}

void serve_queries() {
  for (;;) {
    int pending = 0;
    MPI_Status status;
    MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, state.comm, &pending, &status));
    if (!pending) return;
    int query = 0;
    MPI_CHECK(MPI_Recv(&query, 1, MPI_INT, status.MPI_SOURCE, kQueryTag, state.comm, MPI_STATUS_IGNORE));
    const std::string text = answer();
    // A few hundred bytes go eagerly: the send completes without the asker's receive.
    MPI_CHECK(MPI_Send(text.c_str(), static_cast<int>(text.size()) + 1, MPI_CHAR, status.MPI_SOURCE, kReplyTag,
                       state.comm));
  }
}

// One rank asked where it is, and its answer.
struct Asked {
  int rank = 0;
  bool direct = false;  // one the expired wait needs, not one found behind it
  std::vector<char> reply = std::vector<char>(kAnswerChars, 0);
  MPI_Request receive = MPI_REQUEST_NULL, query = MPI_REQUEST_NULL;
  int answered = 0;
  std::vector<std::string> fields() const {  // step, phase, what, peers
    std::vector<std::string> out(4);
    size_t f = 0;
    for (const char* c = reply.data(); *c && f < 4; c++) (*c == '\t') ? (void)f++ : out[f].push_back(*c);
    return out;
  }
};

std::string silent(int rank) {
  return "rank " + std::to_string(rank) + " (no answer within " + std::to_string(static_cast<int>(kReplyGrace)) +
         " s: hung, dead, or busy outside a watched wait)";
}

// Asks the ranks `site` needs where they are; follows a rank that waits elsewhere to the ranks
// its wait needs (a chain of waits ends at the rank that stopped); prints the line; aborts.
[[noreturn]] void expire(const WaitSite& site) {
  std::deque<Asked> asked;
  std::vector<bool> seen(static_cast<size_t>(state.world), false);
  seen[state.rank] = true;
  const int query = 0;
  auto ask = [&](int r, bool direct) {
    if (seen[r]) return;
    seen[r] = true;
    Asked& a = asked.emplace_back();
    a.rank = r;
    a.direct = direct;
    MPI_CHECK(MPI_Irecv(a.reply.data(), kAnswerChars, MPI_CHAR, r, kReplyTag, state.comm, &a.receive));
    MPI_CHECK(MPI_Isend(&query, 1, MPI_INT, r, kQueryTag, state.comm, &a.query));
  };
  for (int r = 0; r < state.world; r++)
    if (site.peers.empty() || std::find(site.peers.begin(), site.peers.end(), r) != site.peers.end()) ask(r, true);
  const auto until = Clock::now() + std::chrono::duration<double>(kReplyGrace);
  for (bool waiting = true; waiting && Clock::now() < until;) {
    serve_queries();  // a rank asking this one at the same time gets its answer
    waiting = false;
    for (size_t i = 0; i < asked.size(); i++) {
      Asked& a = asked[i];
      if (a.answered) continue;
      MPI_CHECK(MPI_Test(&a.receive, &a.answered, MPI_STATUS_IGNORE));
      waiting = waiting || !a.answered;
      if (!a.answered) continue;
      const std::vector<std::string> f = a.fields();
      for (size_t at = 0, next; at < f[3].size(); at = next + 1) {  // the ranks its own wait needs
        next = f[3].find(',', at);
        ask(std::stoi(f[3].substr(at, next - at)), false);
        waiting = true;
      }
    }
  }
  const std::string step = std::to_string(state.step);
  std::string missing, arrived, behind;
  auto add = [](std::string& list, const std::string& item) { list += (list.empty() ? "" : "; ") + item; };
  for (const Asked& a : asked) {
    const std::vector<std::string> f = a.fields();
    if (!a.direct) {
      if (!a.answered) add(behind, silent(a.rank));
    } else if (!a.answered) {
      add(missing, silent(a.rank));
    } else if (f[0] == step && f[2] == site.what) {
      arrived += (arrived.empty() ? "" : ", ") + std::to_string(a.rank);
    } else {
      add(missing, "rank " + std::to_string(a.rank) + " (step " + f[0] + ", " + f[1] +
                       (f[2].empty() ? ", in no wait" : ", waiting in " + f[2]) + ")");
    }
  }
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", state.timeout_s);
  std::string line = "eth_train: rank " + std::to_string(state.rank) + " (" + progress_text() + "): watchdog: " +
                     site.what + " not complete after " + seconds + " s; did not arrive: " +
                     (missing.empty() ? "none (every rank waits in it: a transport that stopped?)" : missing);
  if (!behind.empty()) line += "; behind them: " + behind;
  if (!arrived.empty()) line += "; arrived: rank(s) " + arrived;
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  for (const std::function<void()>* hook : state.expiry_hooks) (*hook)();
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort does not return
}

}  // namespace

void arm_watchdog(double seconds) {
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &state.rank));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &state.world));
  state.timeout_s = seconds;
  if (seconds > 0 && state.comm == MPI_COMM_NULL) MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &state.comm));
}

void set_progress(int step, const char* phase) {
  state.step = step;
  state.phase = phase;
}

void set_phase(const char* phase) { state.phase = phase; }

std::string progress_text() {
  return state.step == 0 ? std::string(state.phase) : "step " + std::to_string(state.step) + ", " + state.phase;
}

void watched_wait(const std::function<bool()>& done, const WaitSite& site) {
  if (done()) return;
  if (state.comm == MPI_COMM_NULL || state.timeout_s <= 0) {
    while (!done()) {
    }
    return;
  }
  const WaitSite* outer = state.waiting;
  state.waiting = &site;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(state.timeout_s));
  auto next_serve = start + kServeEvery;
  while (!done()) {
    const auto now = Clock::now();
    if (now < next_serve) continue;
    serve_queries();
    if (now >= deadline) expire(site);
    next_serve = now + kServeEvery;
  }
  state.waiting = outer;
}

void watched_wait_all(std::vector<MPI_Request>& requests, const WaitSite& site) {
  watched_wait([&] {
    int complete = 0;
    MPI_CHECK(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &complete, MPI_STATUSES_IGNORE));
    return complete != 0;
  }, site);
  requests.clear();
}

void watched_wait_one(MPI_Request& request, const WaitSite& site) {
  watched_wait([&] {
    int complete = 0;
    MPI_CHECK(MPI_Test(&request, &complete, MPI_STATUS_IGNORE));
    return complete != 0;
  }, site);
}

WatchdogExpiryHook::WatchdogExpiryHook(std::function<void()> hook) : hook_(std::move(hook)) {
  state.expiry_hooks.push_back(&hook_);
}
WatchdogExpiryHook::~WatchdogExpiryHook() {
  state.expiry_hooks.erase(std::find(state.expiry_hooks.begin(), state.expiry_hooks.end(), &hook_));
}

}  // namespace eth

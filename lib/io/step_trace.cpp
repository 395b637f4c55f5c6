#include "lib/io/step_trace.hpp"

#include <mpi.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "lib/base/input_error.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth {
namespace {

const char* name_of(SpanKind k) {
  switch (k) {
    case SpanKind::forward: return "forward";
    case SpanKind::backward: return "backward";
    case SpanKind::comm_wait: return "send/recv wait";
    case SpanKind::reduce: return "gradient reduction";
    case SpanKind::optimizer: return "optimizer";
  }
  return "?";
}

}  // namespace

StepTrace::StepTrace(bool keep_spans) : origin_(std::chrono::steady_clock::now()), keep_spans_(keep_spans) {}

double StepTrace::now_ms() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - origin_).count();
}

void StepTrace::begin_step() {
  times_ = {};
  step_start_ = now_ms();
}

void StepTrace::add(SpanKind kind, int micro_batch, double start_ms) {
  const double end = now_ms();
  const double ms = end - start_ms;
  switch (kind) {
    case SpanKind::forward:
    case SpanKind::backward: times_.compute_ms += ms; break;
    case SpanKind::comm_wait: times_.comm_wait_ms += ms; break;
    case SpanKind::reduce: times_.reduce_ms += ms; break;
    case SpanKind::optimizer: times_.optimizer_ms += ms; break;
  }
  if (keep_spans_) spans_.push_back({kind, micro_batch, start_ms, end});
}

void StepTrace::end_step() { times_.step_ms = now_ms() - step_start_; }

void StepTrace::mark(const std::string& name, const nlohmann::json& args) {
  if (keep_spans_) marks_.push_back({now_ms(), name, args});
}

void StepTrace::write_chrome_trace(const std::string& path, const std::vector<std::string>& row_names) const {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(world_comm(), &rank));
  MPI_CHECK(MPI_Comm_size(world_comm(), &size));
  // Each span travels as 4 doubles: kind, micro-batch, start, end.
  std::vector<double> mine;
  for (const Span& s : spans_) mine.insert(mine.end(), {static_cast<double>(s.kind), static_cast<double>(s.micro_batch), s.start_ms, s.end_ms});
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(size)), displs(static_cast<size_t>(size), 0);
  MPI_CHECK(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, world_comm()));
  for (int r = 1; r < size; r++) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<double> all(rank == 0 ? static_cast<size_t>(displs.back() + counts.back()) : 0);
  MPI_CHECK(MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0,
                        world_comm()));
  if (rank != 0) return;

  nlohmann::json events = nlohmann::json::array();
  for (int r = 0; r < size; r++) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", r}, {"args", {{"name", row_names[r]}}}});
    for (int i = displs[r]; i < displs[r] + counts[r]; i += 4) {
      const auto kind = static_cast<SpanKind>(static_cast<int>(all[i]));
      const int mb = static_cast<int>(all[i + 1]);
      std::string name = name_of(kind);
      if (mb >= 0) name.append(" ").append(std::to_string(mb));
      events.push_back({{"name", name}, {"cat", name_of(kind)}, {"ph", "X"}, {"pid", 0}, {"tid", r},
                        {"ts", all[i + 2] * 1e3}, {"dur", (all[i + 3] - all[i + 2]) * 1e3}});
    }
  }
  for (const Mark& m : marks_)
    events.push_back({{"name", m.name}, {"ph", "i"}, {"s", "g"}, {"pid", 0}, {"tid", 0}, {"ts", m.at_ms * 1e3}, {"args", m.args}});
  std::ofstream out(path);
  if (!out) fail_input(path, "--trace", "a writable path", "a path that cannot be opened");
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << '\n';
}

}  // namespace eth

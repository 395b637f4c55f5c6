// Where each rank's time goes: spans of forward, backward, communication waits, gradient
// reduction and optimizer, recorded per step; per-step totals for metrics.jsonl; and one Chrome
// trace (chrome://tracing, Perfetto) with a row per rank, merged on rank 0.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace eth {

enum class SpanKind { forward, backward, comm_wait, reduce, optimizer };

struct Span {
  SpanKind kind;
  int micro_batch;   // -1 where none
  double start_ms;   // since the trace's origin
  double end_ms;
};

struct StepTimes {
  double step_ms = 0, compute_ms = 0, comm_wait_ms = 0, reduce_ms = 0, optimizer_ms = 0;
  // The device's time in forward and backward (timed events: what the host's compute spans
  // cannot see where work is asynchronous, as on a GPU); 0 for a rank without compute.
  double device_compute_ms = 0;
  // The backend's allocation high-water mark so far (kernels/device.hpp; 0 where not tracked),
  // set by the trainer so that it is gathered with the times.
  double peak_device_bytes = 0;
  // Bytes sent to neighbouring stages in the step (activations and gradients, as stored).
  double stage_bytes_sent = 0;
  double idle_ms() const { return step_ms - compute_ms - comm_wait_ms - reduce_ms - optimizer_ms; }
};

class StepTrace {
 public:
  // All ranks call it after a barrier, so that their origins agree on one host.
  explicit StepTrace(bool keep_spans);

  double now_ms() const;
  void begin_step();
  void add(SpanKind kind, int micro_batch, double start_ms);  // ends now
  const StepTimes& step_times() const { return times_; }      // of the current step, so far
  void end_step();
  void set_device_compute(double ms) { times_.device_compute_ms = ms; }
  void set_stage_bytes_sent(double bytes) { times_.stage_bytes_sent = bytes; }
  // An instant event of the whole job (a re-balance), drawn across every row; rank 0's are written.
  void mark(const std::string& name, const nlohmann::json& args);

  // Collective: rank 0 writes every rank's spans as one Chrome trace JSON. `row_names` label
  // the rows ("rank 3: pipeline 1 stage 0"), rank by rank, on rank 0.
  void write_chrome_trace(const std::string& path, const std::vector<std::string>& row_names) const;

 private:
  std::chrono::steady_clock::time_point origin_;
  bool keep_spans_;
  double step_start_ = 0;
  StepTimes times_;
  std::vector<Span> spans_;
  struct Mark {
    double at_ms;
    std::string name;
    nlohmann::json args;
  };
  std::vector<Mark> marks_;
};

}  // namespace eth

// What rank 0 reports of each step: every rank's times, gathered, and the rates derived from
// them (tokens/s, MFU, the time left).
#pragma once

#include <chrono>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/io/step_trace.hpp"
#include "lib/plan/plan.hpp"

namespace eth {

// Per-step timing of every rank, gathered on rank 0 for the log line and metrics.
struct StepReport {
  std::vector<StepTimes> ranks;
  nlohmann::json pipelines = nlohmann::json::array();  // per pipeline: ms, bubble %
};

// Collective over every rank of the job; complete on rank 0.
StepReport gather_times(const StepTimes& mine, const Plan& plan, int world);

// Rank 0's rates of a step: tokens per second and MFU from the step's own time, the estimated
// time to the last step from the wall time of the steps this process ran so far (evaluations
// and checkpoints included).
class StepRates {
 public:
  // `flops_per_step`: model FLOPs of one optimizer step; `peak_flops`: the job's (0: unknown).
  StepRates(double tokens_per_step, double flops_per_step, double peak_flops);
  void start(int resumed_step);  // before the first step of this process, after `resumed_step` steps
  struct Rates {
    double tokens_per_s, mfu, eta_s;  // mfu < 0: no peak rate known
  };
  // After step `done` (1-based) of `steps`, which took `ms` on rank 0.
  Rates after(int done, int steps, double ms);

 private:
  double tokens_per_step_, flops_per_step_, peak_flops_;
  std::chrono::steady_clock::time_point started_;
  int resumed_step_ = 0;
};

}  // namespace eth

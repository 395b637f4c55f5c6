#include "lib/job/step_report.hpp"

#include <mpi.h>

#include <algorithm>

#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/watchdog.hpp"

namespace eth {

StepReport gather_times(const StepTimes& mine, const Plan& plan, int world) {
  StepReport report;
  report.ranks.resize(static_cast<size_t>(world));
  MPI_Request request;
  MPI_CHECK(MPI_Igather(&mine, sizeof(StepTimes), MPI_BYTE, report.ranks.data(), sizeof(StepTimes), MPI_BYTE, 0,
                        world_comm(), &request));
  watched_wait_one(request, {"the gather of step times", {}});
  for (const PlanPipeline& pipe : plan.pipelines) {
    // A pipeline's time runs until its slowest rank's last backward; its bubble is the share
    // of that time its ranks spent not computing.
    double ms = 0, compute = 0;
    int ranks = 0;
    for (const PlanStage& stage : pipe.stages)
      for (int r : stage.ranks) {
        const StepTimes& t = report.ranks[r];
        ms = std::max(ms, t.step_ms - t.reduce_ms - t.optimizer_ms);
        compute += t.compute_ms;
        ranks++;
      }
    report.pipelines.push_back({{"ms", ms}, {"bubble_pct", ms > 0 ? 100.0 * (1.0 - compute / ranks / ms) : 0.0}});
  }
  return report;
}

StepRates::StepRates(double tokens_per_step, double flops_per_step, double peak_flops)
    : tokens_per_step_(tokens_per_step), flops_per_step_(flops_per_step), peak_flops_(peak_flops) {}

void StepRates::start(int resumed_step) {
  started_ = std::chrono::steady_clock::now();
  resumed_step_ = resumed_step;
}

StepRates::Rates StepRates::after(int done, int steps, double ms) {
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const double s_per_step = elapsed_s / (done - resumed_step_);
  return {tokens_per_step_ / ms * 1e3, peak_flops_ > 0 ? flops_per_step_ / (ms * 1e-3) / peak_flops_ : -1.0,
          s_per_step * (steps - done)};
}

}  // namespace eth

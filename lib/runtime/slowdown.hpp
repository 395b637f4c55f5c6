// The slowdown switch, for tests and benchmarks of online re-balancing (docs/usage.md, "Slowing a
// rank down"): `eth_train --slowdown RANK:FACTOR:STEP` makes rank RANK compute FACTOR times
// slower from step STEP (1-based, as in the log) on, as a throttled GPU or a shared node would.
// After each forward and each backward the runtime (lib/runtime/pipeline_runtime.cpp) waits for it and
// stalls the rank's compute stream (Device::stall) for (FACTOR - 1) times the action's device
// time, so the device time it measures, and the step's critical path through the rank, grow
// FACTOR-fold while the numbers it computes stay the same. The rule with the latest STEP in
// effect for a rank wins (FACTOR 1 ends a slowdown). It is the only place that decides which
// rank is slowed on purpose.
#pragma once

#include <string>
#include <vector>

namespace eth {

struct SlowdownRule {
  int rank = 0;
  double factor = 1.0;  // >= 1
  int from_step = 1;    // 1-based
};

// "RANK:FACTOR:STEP"; an InputError naming --slowdown otherwise.
SlowdownRule parse_slowdown(const std::string& text);

// The factor for `rank` at step `step` (0-based, as the training loop counts).
double slowdown_factor(const std::vector<SlowdownRule>& rules, int rank, int step);

// What the re-balancer sees under `eth_train --modelled-compute-ms MS` (tests): rank r's compute
// of step `step` as MS per sample for its samples[r] samples, times its slowdown factor, instead
// of the time measured. The measured times of a tiny model on a loaded machine (4 ranks on 2
// cores, under a sanitizer) are noise enough to flip a decision; these are not, so a test can
// say which split each decision must choose.
std::vector<double> modelled_compute_ms(const std::vector<SlowdownRule>& rules, const std::vector<int>& samples,
                                        int step, double ms_per_sample);

}  // namespace eth

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

}  // namespace eth

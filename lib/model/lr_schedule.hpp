// Learning rate: linear warm-up to the peak, then cosine decay to the floor at the last step.
#pragma once

#include <cmath>

namespace eth {

struct LrSchedule {
  float peak = 6e-4f;
  float floor = 6e-5f;
  int warmup_steps = 0;
  int total_steps = 1;

  float at(int step) const {  // step is 0-based
    if (step < warmup_steps) return peak * static_cast<float>(step + 1) / static_cast<float>(warmup_steps);
    const int decay_steps = total_steps - warmup_steps;
    if (decay_steps <= 1) return peak;
    const double progress = static_cast<double>(step - warmup_steps) / (decay_steps - 1);
    return floor + static_cast<float>(0.5 * (1.0 + std::cos(M_PI * progress))) * (peak - floor);
  }
};

}  // namespace eth

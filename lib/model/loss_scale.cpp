#include "lib/model/loss_scale.hpp"

namespace eth {

LossScale::LossScale(const LossScaleConfig& config) : config_(config) {
  state_.scale = config.dynamic ? config.initial : 1.0;
}

bool LossScale::after_step(bool overflow) {
  if (!config_.dynamic) return !overflow;
  if (overflow) {
    state_.skipped++;
    state_.clean_steps = 0;
    state_.scale /= 2;
    return state_.scale >= config_.floor;
  }
  if (++state_.clean_steps >= config_.window) {
    state_.scale *= 2;
    state_.clean_steps = 0;
  }
  return true;
}

}  // namespace eth

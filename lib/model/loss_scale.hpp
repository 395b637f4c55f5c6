// Dynamic loss scaling, for jobs with fp16 ranks: fp16's 5 exponent bits hold gradients between
// 2^-24 and 65504 only, so the loss is multiplied by a scale S before backward (the dlogits, and
// every activation gradient after them, are S times the true ones), and the parameter gradients
// are divided by S in fp32 before clipping and AdamW. One scale on every rank: each rank keeps
// this object and feeds it the same agreed outcome of each step (the world sum of the squared
// gradient norm, which is not finite when any rank's gradient overflowed), so all scales agree
// without a message of their own.
//
//   overflow (the norm or the loss not finite): the step is skipped on every rank (no parameter,
//     moment or AdamW step counter changes), S halves; below `floor` the job ends
//   `window` clean steps in a row: S doubles
//
// As PyTorch's GradScaler (init 2^16, factors 2 and 1/2) and Megatron-LM's and DeepSpeed's
// dynamic scalers (a window of clean steps; DeepSpeed's floor of 1). A job without fp16 ranks
// keeps S = 1 and never skips: a non-finite step ends it (lib/job/trainer.cpp).
#pragma once

#include <cstdint>

namespace eth {

struct LossScaleConfig {
  bool dynamic = false;     // on for a job with fp16 ranks (lib/job)
  double initial = 65536;   // 2^16
  int window = 1000;        // clean steps before the scale doubles
  double floor = 1;         // a scale that would fall below it ends the job
};

// What a checkpoint keeps of it, so that a resumed run goes on as the uninterrupted one would.
struct LossScaleState {
  double scale = 1;
  int clean_steps = 0;   // since the last change
  int64_t skipped = 0;   // steps skipped for an overflow, over the run
};

class LossScale {
 public:
  explicit LossScale(const LossScaleConfig& config);

  double value() const { return state_.scale; }
  bool dynamic() const { return config_.dynamic; }
  const LossScaleConfig& config() const { return config_; }
  const LossScaleState& state() const { return state_; }
  void restore(const LossScaleState& state) { state_ = state; }

  // Whether an overflow in the next step would end the job (halving would fall below the floor).
  bool overflow_would_end() const { return config_.dynamic && state_.scale / 2 < config_.floor; }
  // After a step whose outcome was `overflow` (every rank passes the same): false when the scale
  // fell below the floor (the caller ends the job), true otherwise.
  bool after_step(bool overflow);

 private:
  LossScaleConfig config_;
  LossScaleState state_;
};

}  // namespace eth

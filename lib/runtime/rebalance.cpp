#include "lib/runtime/rebalance.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

#include "lib/plan/batch_balance.hpp"

namespace eth {
namespace {

// Weight of a new measurement in the smoothed rate: half, so that a rank that slowed down is
// seen at 3/4 of its new rate two steps later, while one noisy step moves it only halfway.
constexpr double kNewWeight = 0.5;

std::vector<double> speeds(const PlanStage& stage, const std::vector<double>& ms_per_sample) {
  std::vector<double> v;
  for (int r : stage.ranks) v.push_back(1.0 / ms_per_sample[r]);
  return v;
}

// A micro-batch's time in `stage` when rank i takes split[i] samples (the slowest rank's).
double stage_ms(const PlanStage& stage, const std::vector<int>& split, const std::vector<double>& ms_per_sample) {
  double ms = 0;
  for (size_t i = 0; i < stage.ranks.size(); i++) ms = std::max(ms, split[i] * ms_per_sample[stage.ranks[i]]);
  return ms;
}

PipelineRate rate_of(const PlanPipeline& pipe, const std::vector<double>& ms_per_sample) {
  PipelineRate rate{0, 0, pipe.micro_batch, 1};
  for (const PlanStage& stage : pipe.stages) {
    const double ms = stage_ms(stage, stage.split.empty() ? std::vector<int>{pipe.micro_batch} : stage.split, ms_per_sample);
    rate.max_stage_ms = std::max(rate.max_stage_ms, ms);
    rate.sum_stage_ms += ms;
    rate.min_last = std::max(rate.min_last, static_cast<int>(stage.ranks.size()));
  }
  return rate;
}

// A smaller last micro-batch's split by speed, each rank at most its full share (split_by_speed
// may round a share of a smaller batch above that of the full one).
std::vector<int> last_split(int last, const std::vector<int>& full, const std::vector<double>& speed) {
  std::vector<int> split = split_by_speed(last, speed);
  for (size_t i = 0; i < split.size(); i++)
    for (size_t j = 0; split[i] > full[i] && j < split.size(); j++)
      if (split[j] < full[j]) {
        const int move = std::min(split[i] - full[i], full[j] - split[j]);
        split[i] -= move;
        split[j] += move;
      }
  return split;
}

}  // namespace

double predicted_step_ms(const Plan& plan, const std::vector<double>& ms_per_sample) {
  double ms = 0;
  for (const PlanPipeline& pipe : plan.pipelines) ms = std::max(ms, rate_of(pipe, ms_per_sample).ms(pipe.micro_batches));
  return ms;
}

std::optional<Plan> rebalanced_plan(const Plan& plan, const std::vector<double>& ms_per_sample) {
  Plan next = plan;
  std::vector<PipelineRate> rates;
  for (PlanPipeline& pipe : next.pipelines) {
    for (PlanStage& stage : pipe.stages)
      if (stage.ranks.size() > 1) stage.split = split_by_speed(pipe.micro_batch, speeds(stage, ms_per_sample));
    rates.push_back(rate_of(pipe, ms_per_sample));
  }
  const std::optional<std::vector<int>> samples = balance_samples(rates, plan.global_batch);
  if (!samples) return std::nullopt;
  for (size_t k = 0; k < next.pipelines.size(); k++) {
    PlanPipeline& pipe = next.pipelines[k];
    const int n = (*samples)[k], b = pipe.micro_batch;
    pipe.micro_batches = (n + b - 1) / b;
    pipe.last_micro_batch = n % b;
    for (PlanStage& stage : pipe.stages) {
      stage.last_split.clear();
      if (stage.ranks.size() > 1 && pipe.short_last())
        stage.last_split = last_split(pipe.last_micro_batch, stage.split, speeds(stage, ms_per_sample));
    }
  }
  next.predicted = {};  // the planner's prediction was for the old split
  return next;
}

bool same_stages(const Plan& a, const Plan& b) {
  if (a.global_batch != b.global_batch || a.idle != b.idle || a.pipelines.size() != b.pipelines.size()) return false;
  for (size_t k = 0; k < a.pipelines.size(); k++) {
    const PlanPipeline &p = a.pipelines[k], &q = b.pipelines[k];
    if (p.micro_batch != q.micro_batch || p.stages.size() != q.stages.size()) return false;
    for (size_t s = 0; s < p.stages.size(); s++)
      if (p.stages[s].ranks != q.stages[s].ranks || p.stages[s].layers.begin != q.stages[s].layers.begin ||
          p.stages[s].layers.end != q.stages[s].layers.end)
        return false;
  }
  return true;
}

Plan with_batch_split(Plan plan, const Plan& split) {
  assert(same_stages(plan, split));
  for (size_t k = 0; k < plan.pipelines.size(); k++) {
    PlanPipeline &to = plan.pipelines[k];
    const PlanPipeline& from = split.pipelines[k];
    to.micro_batches = from.micro_batches;
    to.last_micro_batch = from.last_micro_batch;
    for (size_t s = 0; s < to.stages.size(); s++) {
      to.stages[s].split = from.stages[s].split;
      to.stages[s].last_split = from.stages[s].last_split;
    }
  }
  plan.predicted = split.predicted;
  return plan;
}

std::vector<int> samples_per_step(const Plan& plan, int world_size) {
  std::vector<int> samples(static_cast<size_t>(world_size), 0);
  const std::vector<RankRole> roles = rank_roles(plan, world_size);
  for (int r = 0; r < world_size; r++) {
    if (roles[r].idle()) continue;
    const PlanPipeline& pipe = plan.pipelines[roles[r].pipeline];
    samples[r] = roles[r].samples * (pipe.micro_batches - 1) + (pipe.short_last() ? roles[r].last_samples : roles[r].samples);
  }
  return samples;
}

// A plan's batch split, for metrics and the trace: per pipeline its samples, micro-batches and
// the split of each stage of several ranks.
nlohmann::json split_json(const Plan& plan) {
  nlohmann::json pipes = nlohmann::json::array();
  for (const PlanPipeline& pipe : plan.pipelines) {
    nlohmann::json splits = nlohmann::json::array();
    for (const PlanStage& stage : pipe.stages)
      if (stage.ranks.size() > 1) splits.push_back({{"ranks", stage.ranks}, {"split", stage.split}, {"last_split", stage.last_split}});
    pipes.push_back({{"samples", pipe.samples()}, {"micro_batch", pipe.micro_batch}, {"micro_batches", pipe.micro_batches},
                     {"last_micro_batch", pipe.last_micro_batch}, {"stages", splits}});
  }
  return pipes;
}

// "8 (3:1), 4": each pipeline's samples, with the split of each stage of several ranks.
std::string split_text(const Plan& plan) {
  std::string text;
  for (const PlanPipeline& pipe : plan.pipelines) {
    if (!text.empty()) text += ", ";
    text += std::to_string(pipe.samples());
    for (const PlanStage& stage : pipe.stages) {
      if (stage.ranks.size() < 2) continue;
      for (size_t i = 0; i < stage.split.size(); i++) text += (i == 0 ? " (" : ":") + std::to_string(stage.split[i]);
      text += ")";
    }
  }
  return text;
}

Rebalancer::Rebalancer(const RebalanceOptions& options, int world_size)
    : options_(options), rate_(static_cast<size_t>(world_size), 0.0) {}

void Rebalancer::observe(const Plan& plan, const std::vector<double>& compute_ms) {
  const std::vector<int> samples = samples_per_step(plan, static_cast<int>(rate_.size()));
  for (size_t r = 0; r < rate_.size(); r++) {
    if (samples[r] == 0 || compute_ms[r] <= 0) continue;
    const double now = compute_ms[r] / samples[r];
    rate_[r] = rate_[r] == 0 ? now : (1 - kNewWeight) * rate_[r] + kNewWeight * now;
  }
}

std::optional<RebalanceDecision> Rebalancer::decide(const Plan& plan, int step) {
  if (options_.every <= 0 || (step + 1) % options_.every != 0) return std::nullopt;
  const std::vector<int> samples = samples_per_step(plan, static_cast<int>(rate_.size()));
  for (size_t r = 0; r < rate_.size(); r++)
    if (samples[r] > 0 && rate_[r] <= 0) return std::nullopt;  // not measured yet
  const bool behind_before = std::exchange(behind_, false);
  std::optional<Plan> next = rebalanced_plan(plan, rate_);
  if (!next || plan_yaml(*next) == plan_yaml(plan)) return std::nullopt;  // nothing would change
  RebalanceDecision d{*next, predicted_step_ms(plan, rate_), predicted_step_ms(*next, rate_)};
  if (d.gain() < options_.threshold) return std::nullopt;
  behind_ = !behind_before;  // seen once: wait for the next decision; twice: change
  if (behind_) return std::nullopt;
  return d;
}

}  // namespace eth

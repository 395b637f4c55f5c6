#include "lib/planner/local_search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/plan/plan_validation.hpp"
#include "lib/planner/plan_moves.hpp"
#include "lib/planner/stage_cost.hpp"

namespace eth::planner {

using edit::from_plan;
using edit::Mover;
using edit::Pipe;
using edit::State;
using edit::to_plan;
using edit::widest;

namespace {

// validate_plan (structure; then, with the least recomputation that fits, memory from the
// analytic model), then the simulator.
std::optional<Candidate> evaluate(const CostModel& cost, const State& st, int global_batch, const std::string& label) {
  Plan plan = to_plan(st, global_batch);
  try {
    validate_plan(plan, cost.topology(), cost.model());
  } catch (const InputError&) {
    return std::nullopt;
  }
  for (PlanPipeline& pipe : plan.pipelines)
    if (!choose_recompute(cost, pipe)) return std::nullopt;
  Candidate c;
  c.label = label;
  c.estimate = cost.estimate(plan);
  plan.predicted.memory_gb = c.estimate.memory_gb;
  try {
    validate_plan(plan, cost.topology(), cost.model());
  } catch (const InputError&) {
    return std::nullopt;
  }
  c.simulation = simulate(cost, plan);
  plan.predicted = {c.simulation.iteration_ms, c.simulation.pipeline_ms, c.estimate.memory_gb};
  c.plan = std::move(plan);
  return c;
}

}  // namespace

std::optional<Plan> random_plan(const CostModel& cost, const PlanRequest& request, std::mt19937_64& rng, int tries) {
  const Topology& topo = cost.topology();
  const int N = topo.world_size(), L = cost.model().num_layers;
  std::vector<std::vector<int>> by_type(topo.device_types.size());
  for (int r = 0; r < N; r++) by_type[topo.ranks[r].device_type].push_back(r);
  const int max_mb = *std::max_element(request.micro_batches.begin(), request.micro_batches.end());
  Mover mover(cost, rng, request);
  for (int attempt = 0; attempt < tries; attempt++) {
    const int most = std::min(N, request.global_batch);
    const int P = std::clamp(int(std::lround(std::exp(std::uniform_real_distribution<double>(0, std::log(double(most)))(rng)))), 1, most);
    std::vector<int> types;
    for (size_t t = 0; t < by_type.size(); t++)
      if (!by_type[t].empty()) types.push_back(int(t));
    if (mover.chance(0.5)) std::shuffle(types.begin(), types.end(), rng);
    else
      std::stable_sort(types.begin(), types.end(),
                       [&](int a, int b) { return topo.device_types[a].memory_gb > topo.device_types[b].memory_gb; });
    State st;
    std::vector<double> speed;
    for (int k = 0; k < P; k++) {
      Pipe pipe;
      const int width = 1 << mover.pick(6);
      double v = 0;
      for (int t : types) {
        const size_t n = by_type[t].size();
        std::vector<int> run(by_type[t].begin() + long(size_t(k) * n / size_t(P)), by_type[t].begin() + long(size_t(k + 1) * n / size_t(P)));
        const size_t count = (run.size() + size_t(width) - 1) / size_t(width);
        for (size_t c = 0; c < count; c++)
          pipe.ranks.emplace_back(run.begin() + long(c * run.size() / count), run.begin() + long((c + 1) * run.size() / count));
        const ProfileEntry e = cost.profile(t).at(1);
        v += double(run.size()) / (e.layer.forward_ms + e.layer.backward_ms);
      }
      if (pipe.ranks.empty()) continue;
      st.pipes.push_back(std::move(pipe));
      speed.push_back(v);
    }
    const double total = std::accumulate(speed.begin(), speed.end(), 0.0);
    int given = 0;
    for (size_t k = 0; k < st.pipes.size(); k++) {
      st.pipes[k].samples = std::max(1, int(request.global_batch * speed[k] / total));
      given += st.pipes[k].samples;
    }
    if (given > request.global_batch) continue;
    st.pipes[size_t(mover.pick(int(st.pipes.size())))].samples += request.global_batch - given;
    bool ok = true;
    for (Pipe& pipe : st.pipes) {
      pipe.mb = std::min(pipe.samples, std::max<int>(int(widest(pipe)), 1 + mover.pick(max_mb)));
      ok = ok && static_cast<int>(pipe.ranks.size()) <= L && mover.repair(pipe, true);
    }
    if (!ok) continue;
    if (std::optional<Candidate> c = evaluate(cost, st, request.global_batch, "random")) return std::move(c->plan);
  }
  return std::nullopt;
}

LocalSearchResult local_search(const CostModel& cost, const PlanRequest& request, const std::vector<Candidate>& given,
                               const LocalSearchOptions& options, const std::string& where) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); };
  std::vector<Candidate> starts = given;
  std::mt19937_64 start_rng(options.seed);
  for (int i = 0; i < options.random_starts; i++)
    if (std::optional<Plan> plan = random_plan(cost, request, start_rng)) {
      Plan p = std::move(*plan);
      p.predicted = {};
      starts.push_back(evaluate_plan(cost, std::move(p), strprintf("random %d", i + 1)));
    }
  if (starts.empty()) fail_input(where, "local search", "at least one valid start plan", "none");
  LocalSearchResult result;
  std::optional<Candidate> best;
  const int per_start = std::max(1, options.iterations / static_cast<int>(starts.size()));
  for (size_t i = 0; i < starts.size(); i++) {
    std::mt19937_64 rng(options.seed * 1000003ULL + i);
    Mover mover(cost, rng, request);
    State current = from_plan(starts[i].plan);
    double current_ms = starts[i].simulation.iteration_ms;
    LocalSearchStart record{starts[i].label, current_ms, current_ms};
    const std::string label = "local search from " + starts[i].label;
    if (!best || current_ms < best->simulation.iteration_ms) {
      best = starts[i];
      best->label = label;
    }
    for (int it = 0; it < per_start; it++) {
      if (options.time_limit_ms > 0 && elapsed_ms() > options.time_limit_ms) break;
      result.moves++;
      State next = current;
      if (!mover.apply(next)) continue;
      std::optional<Candidate> c = evaluate(cost, next, request.global_batch, label);
      if (!c) continue;
      result.evaluated++;
      const double ms = c->simulation.iteration_ms;
      const double temperature = options.temperature * (1.0 - double(it) / per_start);
      const bool accept = ms <= current_ms ||
                          (temperature > 0 && std::uniform_real_distribution<double>(0, 1)(rng) <
                                                  std::exp(-(ms - current_ms) / (temperature * current_ms)));
      if (accept) {
        current = std::move(next);
        current_ms = ms;
      }
      record.end_ms = std::min(record.end_ms, ms);
      if (ms < best->simulation.iteration_ms) {
        best = std::move(*c);
        result.improvements++;
      }
    }
    result.starts.push_back(record);
  }
  result.best = std::move(*best);
  result.best.plan.source = "eth_plan (" + result.best.label + ")";
  result.wall_ms = elapsed_ms();
  return result;
}

}  // namespace eth::planner

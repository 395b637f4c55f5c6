#include "lib/planner/local_search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/plan/plan_validation.hpp"
#include "lib/planner/partition.hpp"
#include "lib/planner/stage_cost.hpp"

namespace eth::planner {
namespace {

// A plan being edited: per pipeline its samples, micro-batch, stages' ranks, layer cuts and
// splits. Moves edit it freely; repair() restores what a plan needs before it is checked.
struct Pipe {
  int samples = 0;
  int mb = 1;
  StageRanks ranks;
  std::vector<int> cuts;                // stage s holds layers [cuts[s], cuts[s + 1])
  std::vector<std::vector<int>> split;  // per stage; empty for one rank
};

struct State {
  std::vector<Pipe> pipes;
  std::vector<int> idle;
};

State from_plan(const Plan& plan) {
  State st;
  for (const PlanPipeline& pipe : plan.pipelines) {
    Pipe p;
    p.samples = pipe.samples();
    p.mb = pipe.micro_batch;
    p.cuts.push_back(0);
    for (const PlanStage& stage : pipe.stages) {
      p.ranks.push_back(stage.ranks);
      p.cuts.push_back(stage.layers.end);
      p.split.push_back(stage.split);
    }
    st.pipes.push_back(std::move(p));
  }
  st.idle = plan.idle;
  return st;
}

Plan to_plan(const State& st, int global_batch) {
  Plan plan;
  plan.source = "local search candidate";
  plan.global_batch = global_batch;
  for (const Pipe& p : st.pipes) {
    PlanPipeline pipe{p.mb, p.mb > 0 ? p.samples / p.mb : 0, {}};
    for (size_t s = 0; s < p.ranks.size(); s++)
      pipe.stages.push_back({p.ranks[s], {p.cuts[s], p.cuts[s + 1]}, p.ranks[s].size() > 1 ? p.split[s] : std::vector<int>{}});
    plan.pipelines.push_back(std::move(pipe));
  }
  plan.idle = st.idle;
  std::sort(plan.idle.begin(), plan.idle.end());
  return plan;
}

size_t widest(const Pipe& p) {
  size_t w = 0;
  for (const std::vector<int>& r : p.ranks) w = std::max(w, r.size());
  return w;
}

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

class Mover {
 public:
  // Micro-batches of at most max_mb samples, the largest size the request allows; stages of at
  // most max_width ranks (0: any).
  Mover(const CostModel& cost, std::mt19937_64& rng, const PlanRequest& request)
      : cost_(cost), rng_(rng), L_(cost.model().num_layers),
        max_mb_(*std::max_element(request.micro_batches.begin(), request.micro_batches.end())),
        max_width_(request.max_stage_width) {}

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  // The micro-batch closest to the current one that divides the samples and is at least the
  // widest stage; splits of the right length that add up to it kept, others by speed; layers
  // by the DP when asked (or when the stage count no longer matches the cuts), else kept.
  bool repair(Pipe& p, bool relayer) {
    const int S = static_cast<int>(p.ranks.size());
    if (S == 0 || S > L_) return false;
    const int w = static_cast<int>(widest(p));
    if (p.samples < w || w > max_mb_ || (max_width_ > 0 && w > max_width_)) return false;
    if (p.mb < w || p.mb > max_mb_ || p.samples % p.mb) {
      int best = -1;
      for (int d = w; d <= std::min(p.samples, max_mb_); d++)
        if (p.samples % d == 0 && (best < 0 || std::abs(d - p.mb) < std::abs(best - p.mb))) best = d;
      if (best < 0) return false;
      p.mb = best;
    }
    p.split.resize(size_t(S));
    for (int s = 0; s < S; s++) {
      std::vector<int>& sp = p.split[s];
      if (p.ranks[s].size() == 1) sp.clear();
      else if (sp.size() != p.ranks[s].size() || std::accumulate(sp.begin(), sp.end(), 0) != p.mb ||
               std::any_of(sp.begin(), sp.end(), [](int v) { return v < 1; }))
        sp = stage_split(cost_, p.ranks[s], p.mb);
    }
    if (relayer || static_cast<int>(p.cuts.size()) != S + 1 || p.cuts.front() != 0 || p.cuts.back() != L_) {
      if (std::optional<Partition> part = partition_layers(cost_, p.ranks, p.mb)) {
        p.cuts = {0};
        for (const LayerRange& r : part->layers) p.cuts.push_back(r.end);
      } else if (static_cast<int>(p.cuts.size()) != S + 1 || p.cuts.front() != 0 || p.cuts.back() != L_) {
        p.cuts.clear();  // nothing fits the DP's bound: equal layers, the memory check decides
        for (int s = 0; s <= S; s++) p.cuts.push_back(s * L_ / S);
      }
    }
    return true;
  }

  // Repairs every pipeline (re-partitioning those in `relayer`), then drops empty ones.
  bool finish(State& st, const std::vector<bool>& relayer) {
    for (size_t p = 0; p < st.pipes.size(); p++)
      if (!st.pipes[p].ranks.empty() && !repair(st.pipes[p], p < relayer.size() && relayer[p])) return false;
    st.pipes.erase(std::remove_if(st.pipes.begin(), st.pipes.end(), [](const Pipe& p) { return p.ranks.empty(); }),
                   st.pipes.end());
    return !st.pipes.empty();
  }

  // Pipeline p, and half of the time every pipeline of the same shape (samples, micro-batch,
  // stage widths and layers) too: the iteration waits for the slowest pipeline, so a change to
  // one of several identical pipelines alone can never make it faster.
  std::vector<size_t> targets(const State& st, size_t p) {
    std::vector<size_t> out = {p};
    if (chance(0.5)) return out;
    const Pipe& a = st.pipes[p];
    for (size_t q = 0; q < st.pipes.size(); q++) {
      const Pipe& b = st.pipes[q];
      if (q == p || b.samples != a.samples || b.mb != a.mb || b.cuts != a.cuts || b.ranks.size() != a.ranks.size()) continue;
      bool same = true;
      for (size_t s = 0; s < a.ranks.size() && same; s++)
        same = a.ranks[s].size() == b.ranks[s].size() && a.split[s] == b.split[s];
      if (same) out.push_back(q);
    }
    return out;
  }

  std::vector<int> active(const State& st) const {
    std::vector<int> out;
    for (const Pipe& p : st.pipes)
      for (const std::vector<int>& r : p.ranks) out.insert(out.end(), r.begin(), r.end());
    std::sort(out.begin(), out.end());
    return out;
  }

  // Takes rank r out of its stage: a stage of one rank disappears (its layers go to a
  // neighbour), a pipeline of one rank too (its samples go to another pipeline).
  bool remove_rank(State& st, int r, std::vector<bool>& relayer) {
    for (size_t p = 0; p < st.pipes.size(); p++) {
      Pipe& pipe = st.pipes[p];
      for (size_t s = 0; s < pipe.ranks.size(); s++) {
        auto it = std::find(pipe.ranks[s].begin(), pipe.ranks[s].end(), r);
        if (it == pipe.ranks[s].end()) continue;
        if (pipe.ranks[s].size() > 1) {
          pipe.ranks[s].erase(it);
          pipe.split[s].clear();
          return true;
        }
        if (pipe.ranks.size() > 1) {
          pipe.ranks.erase(pipe.ranks.begin() + long(s));
          pipe.split.erase(pipe.split.begin() + long(s));
          pipe.cuts.erase(pipe.cuts.begin() + long(s == 0 ? 1 : s));
          if (chance(0.5)) relayer[p] = true;
          return true;
        }
        std::vector<size_t> others;
        for (size_t q = 0; q < st.pipes.size(); q++)
          if (q != p && !st.pipes[q].ranks.empty()) others.push_back(q);
        if (others.empty()) return false;
        st.pipes[others[size_t(pick(int(others.size())))]].samples += pipe.samples;
        pipe.samples = 0;
        pipe.ranks.clear();
        return true;
      }
    }
    return false;
  }

  // Puts rank r into an existing stage, a new stage, or a new pipeline of its own.
  bool insert_rank(State& st, int r, std::vector<bool>& relayer) {
    std::vector<size_t> live;
    for (size_t p = 0; p < st.pipes.size(); p++)
      if (!st.pipes[p].ranks.empty()) live.push_back(p);
    if (live.empty()) return false;
    const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
    const size_t p = live[size_t(pick(int(live.size())))];
    Pipe& pipe = st.pipes[p];
    if (u < 0.5) {
      const size_t s = size_t(pick(int(pipe.ranks.size())));
      pipe.ranks[s].insert(pipe.ranks[s].begin() + pick(int(pipe.ranks[s].size()) + 1), r);
      pipe.split[s].clear();
      if (chance(0.3)) relayer[p] = true;
    } else if (u < 0.85) {
      const size_t s = size_t(pick(int(pipe.ranks.size()) + 1));
      pipe.ranks.insert(pipe.ranks.begin() + long(s), {r});
      pipe.split.insert(pipe.split.begin() + long(s), std::vector<int>{});
      relayer[p] = true;
    } else {
      if (pipe.samples < 2) return false;
      const int options[3] = {1, pipe.mb, pipe.samples / 2};
      const int take = std::max(1, std::min(pipe.samples - 1, options[pick(3)]));
      pipe.samples -= take;
      Pipe fresh;
      fresh.samples = take;
      fresh.mb = take;
      fresh.ranks = {{r}};
      fresh.split = {{}};
      st.pipes.push_back(std::move(fresh));
      relayer.push_back(true);
    }
    return true;
  }

  // One random move; false when it does not apply or leaves no plan.
  bool apply(State& st) {
    std::vector<bool> relayer(st.pipes.size(), false);
    const std::vector<int> act = active(st);
    const int P = static_cast<int>(st.pipes.size());
    // Weights of: move, swap, split stage, merge stages, cut, split, samples, micro-batch, idle,
    // un-idle, re-partition, split pipeline, merge pipelines.
    static constexpr int kWeights[] = {3, 2, 1, 1, 3, 2, 3, 2, 1, 1, 1, 1, 1};
    const int total = std::accumulate(std::begin(kWeights), std::end(kWeights), 0);
    int roll = pick(total), move = 0;
    while (roll >= kWeights[move]) roll -= kWeights[move++];
    switch (move) {
      case 0: {  // move a device
        if (act.size() < 2) return false;
        const int r = act[size_t(pick(int(act.size())))];
        if (!remove_rank(st, r, relayer) || !insert_rank(st, r, relayer)) return false;
        break;
      }
      case 1: {  // swap two devices of different types
        if (act.size() < 2) return false;
        const int a = act[size_t(pick(int(act.size())))], b = act[size_t(pick(int(act.size())))];
        const Topology& topo = cost_.topology();
        if (topo.ranks[a].device_type == topo.ranks[b].device_type) return false;
        for (size_t p = 0; p < st.pipes.size(); p++)
          for (size_t s = 0; s < st.pipes[p].ranks.size(); s++)
            for (int& r : st.pipes[p].ranks[s])
              if (r == a || r == b) {
                r = r == a ? b : a;
                st.pipes[p].split[s].clear();
                if (chance(0.5)) relayer[p] = true;
              }
        break;
      }
      case 2: {  // split a stage of several devices in two
        const size_t p = size_t(pick(P));
        const size_t s = size_t(pick(int(st.pipes[p].ranks.size())));
        const size_t width = st.pipes[p].ranks[s].size();
        if (width < 2) return false;
        const long at = 1 + pick(int(width) - 1);
        const bool halve_layers = chance(0.5);
        const Topology& topo = cost_.topology();
        for (size_t q : targets(st, p)) {
          Pipe& pipe = st.pipes[q];
          std::vector<int> ranks = pipe.ranks[s];
          std::stable_sort(ranks.begin(), ranks.end(), [&](int x, int y) {
            const DeviceType &dx = topo.device_of(x), &dy = topo.device_of(y);
            return dx.memory_gb != dy.memory_gb ? dx.memory_gb > dy.memory_gb : topo.ranks[x].device_type < topo.ranks[y].device_type;
          });
          pipe.ranks[s] = std::vector<int>(ranks.begin(), ranks.begin() + at);
          pipe.ranks.insert(pipe.ranks.begin() + long(s) + 1, std::vector<int>(ranks.begin() + at, ranks.end()));
          pipe.split[s].clear();
          pipe.split.insert(pipe.split.begin() + long(s) + 1, std::vector<int>{});
          const int begin = pipe.cuts[s], end = pipe.cuts[s + 1];
          if (end - begin >= 2 && halve_layers) pipe.cuts.insert(pipe.cuts.begin() + long(s) + 1, (begin + end) / 2);
          else relayer[q] = true;
        }
        break;
      }
      case 3: {  // merge two neighbouring stages
        const size_t p = size_t(pick(P));
        if (st.pipes[p].ranks.size() < 2) return false;
        const size_t s = size_t(pick(int(st.pipes[p].ranks.size()) - 1));
        const bool again = chance(0.3);
        for (size_t q : targets(st, p)) {
          Pipe& pipe = st.pipes[q];
          pipe.ranks[s].insert(pipe.ranks[s].end(), pipe.ranks[s + 1].begin(), pipe.ranks[s + 1].end());
          pipe.ranks.erase(pipe.ranks.begin() + long(s) + 1);
          pipe.split.erase(pipe.split.begin() + long(s) + 1);
          pipe.split[s].clear();
          pipe.cuts.erase(pipe.cuts.begin() + long(s) + 1);
          if (again) relayer[q] = true;
        }
        break;
      }
      case 4: {  // move a layer cut
        const size_t p = size_t(pick(P));
        const int S = static_cast<int>(st.pipes[p].ranks.size());
        if (S < 2) return false;
        const int c = 1 + pick(S - 1), step = (chance(0.5) ? 1 : -1) * (chance(0.75) ? 1 : 2);
        const int moved = st.pipes[p].cuts[c] + step;
        if (moved <= st.pipes[p].cuts[c - 1] || moved >= st.pipes[p].cuts[c + 1]) return false;
        for (size_t q : targets(st, p)) st.pipes[q].cuts[c] = moved;
        break;
      }
      case 5: {  // move one sample of a stage's split
        const size_t p = size_t(pick(P));
        std::vector<size_t> wide;
        for (size_t s = 0; s < st.pipes[p].ranks.size(); s++)
          if (st.pipes[p].ranks[s].size() > 1) wide.push_back(s);
        if (wide.empty()) return false;
        const size_t s = wide[size_t(pick(int(wide.size())))];
        const std::vector<int>& sp = st.pipes[p].split[s];
        const size_t i = size_t(pick(int(sp.size()))), j = size_t(pick(int(sp.size())));
        if (i == j || sp[i] < 2) return false;
        for (size_t q : targets(st, p)) {
          st.pipes[q].split[s][i]--;
          st.pipes[q].split[s][j]++;
        }
        break;
      }
      case 6: {  // move samples between pipelines
        if (P < 2) return false;
        const int a = pick(P), b = pick(P);
        if (a == b) return false;
        Pipe &from = st.pipes[a], &to = st.pipes[b];
        const int options[3] = {1, from.mb, 1 + pick(std::max(1, from.samples / 2))};
        const int take = options[pick(3)];
        if (from.samples - take < 1) return false;
        from.samples -= take;
        to.samples += take;
        break;
      }
      case 7: {  // change a pipeline's micro-batch size
        const size_t p = size_t(pick(P));
        const Pipe& pipe = st.pipes[p];
        const int w = static_cast<int>(widest(pipe));
        std::vector<int> sizes;
        for (int d = w; d <= std::min(pipe.samples, max_mb_); d++)
          if (pipe.samples % d == 0) sizes.push_back(d);
        auto at = std::find(sizes.begin(), sizes.end(), pipe.mb);
        if (at == sizes.end() || sizes.size() < 2) return false;
        const bool up = at == sizes.begin() ? true : at + 1 == sizes.end() ? false : chance(0.5);
        const int mb = up ? *(at + 1) : *(at - 1);
        for (size_t q : targets(st, p)) {
          st.pipes[q].mb = mb;
          for (std::vector<int>& sp : st.pipes[q].split) sp.clear();
        }
        break;
      }
      case 8: {  // idle a device
        if (act.size() < 2) return false;
        const int r = act[size_t(pick(int(act.size())))];
        if (!remove_rank(st, r, relayer)) return false;
        st.idle.push_back(r);
        break;
      }
      case 9: {  // bring an idle device back
        if (st.idle.empty()) return false;
        const size_t i = size_t(pick(int(st.idle.size())));
        const int r = st.idle[i];
        st.idle.erase(st.idle.begin() + long(i));
        if (!insert_rank(st, r, relayer)) return false;
        break;
      }
      case 10:  // re-partition a pipeline's layers by the DP
        for (size_t q : targets(st, size_t(pick(P)))) relayer[q] = true;
        break;
      case 11: {  // split a pipeline in two
        const size_t p = size_t(pick(P));
        Pipe& pipe = st.pipes[p];
        if (pipe.samples < 2) return false;
        Pipe other;
        const bool all_wide = std::all_of(pipe.ranks.begin(), pipe.ranks.end(), [](const auto& r) { return r.size() > 1; });
        size_t moved = 0, total_ranks = 0;
        if (all_wide && (pipe.ranks.size() < 2 || chance(0.5))) {  // each stage's devices halved: same depth
          other.cuts = pipe.cuts;
          for (size_t s = 0; s < pipe.ranks.size(); s++) {
            std::vector<int>& r = pipe.ranks[s];
            total_ranks += r.size();
            const long keep = long(r.size() / 2);
            other.ranks.emplace_back(r.begin() + keep, r.end());
            moved += r.size() - size_t(keep);
            r.resize(size_t(keep));
            other.split.emplace_back();
            pipe.split[s].clear();
          }
        } else {  // the stages cut in two runs, each a pipeline of all layers
          if (pipe.ranks.size() < 2) return false;
          const long at = 1 + pick(int(pipe.ranks.size()) - 1);
          for (const auto& r : pipe.ranks) total_ranks += r.size();
          other.ranks.assign(pipe.ranks.begin() + at, pipe.ranks.end());
          for (const auto& r : other.ranks) moved += r.size();
          other.split.assign(other.ranks.size(), {});
          pipe.ranks.resize(size_t(at));
          pipe.split.resize(size_t(at));
          pipe.cuts.clear();
          relayer[p] = true;
        }
        const int take = std::clamp(int(std::lround(double(pipe.samples) * double(moved) / double(total_ranks))), 1, pipe.samples - 1);
        other.samples = take;
        other.mb = std::max(1, pipe.mb * take / pipe.samples);
        pipe.samples -= take;
        st.pipes.push_back(std::move(other));
        relayer.push_back(st.pipes.back().cuts.empty());
        break;
      }
      case 12: {  // merge two pipelines of equal depth, stage by stage
        if (P < 2) return false;
        const size_t a = size_t(pick(P)), b = size_t(pick(P));
        if (a == b || st.pipes[a].ranks.size() != st.pipes[b].ranks.size()) return false;
        Pipe &x = st.pipes[a], &y = st.pipes[b];
        for (size_t s = 0; s < x.ranks.size(); s++) {
          x.ranks[s].insert(x.ranks[s].end(), y.ranks[s].begin(), y.ranks[s].end());
          x.split[s].clear();
        }
        x.samples += y.samples;
        x.mb += y.mb;
        y.ranks.clear();
        y.samples = 0;
        if (chance(0.5)) relayer[a] = true;
        break;
      }
    }
    return finish(st, relayer);
  }

 private:
  const CostModel& cost_;
  std::mt19937_64& rng_;
  int L_;
  int max_mb_;
  int max_width_;
};

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

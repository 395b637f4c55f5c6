#include "lib/planner/plan_moves.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lib/planner/partition.hpp"

namespace eth::planner::edit {
namespace {

// Every rank that is in a stage, ascending.
std::vector<int> active(const State& st) {
  std::vector<int> out;
  for (const Pipe& p : st.pipes)
    for (const std::vector<int>& r : p.ranks) out.insert(out.end(), r.begin(), r.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

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

Mover::Mover(const CostModel& cost, std::mt19937_64& rng, const PlanRequest& request)
    : cost_(cost), rng_(rng), L_(cost.model().num_layers),
      max_mb_(*std::max_element(request.micro_batches.begin(), request.micro_batches.end())),
      max_width_(request.max_stage_width) {}

bool Mover::repair(Pipe& p, bool relayer) {
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
bool Mover::finish(State& st, const Relayer& relayer) {
  for (size_t p = 0; p < st.pipes.size(); p++)
    if (!st.pipes[p].ranks.empty() && !repair(st.pipes[p], p < relayer.size() && relayer[p])) return false;
  st.pipes.erase(std::remove_if(st.pipes.begin(), st.pipes.end(), [](const Pipe& p) { return p.ranks.empty(); }),
                 st.pipes.end());
  return !st.pipes.empty();
}

// Pipeline p, and half of the time every pipeline of the same shape (samples, micro-batch,
// stage widths and layers) too: the iteration waits for the slowest pipeline, so a change to
// one of several identical pipelines alone can never make it faster.
std::vector<size_t> Mover::targets(const State& st, size_t p) {
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

// Takes rank r out of its stage: a stage of one rank disappears (its layers go to a
// neighbour), a pipeline of one rank too (its samples go to another pipeline).
bool Mover::remove_rank(State& st, int r, Relayer& relayer) {
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
bool Mover::insert_rank(State& st, int r, Relayer& relayer) {
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

bool Mover::move_device(State& st, Relayer& relayer) {
  const std::vector<int> act = active(st);
  if (act.size() < 2) return false;
  const int r = act[size_t(pick(int(act.size())))];
  return remove_rank(st, r, relayer) && insert_rank(st, r, relayer);
}

// Two devices of different types trade places.
bool Mover::swap_devices(State& st, Relayer& relayer) {
  const std::vector<int> act = active(st);
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
  return true;
}

// A stage of several devices becomes two: the larger-memory devices first, its layers halved
// or re-partitioned.
bool Mover::split_stage(State& st, Relayer& relayer) {
  const size_t p = size_t(pick(int(st.pipes.size())));
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
  return true;
}

bool Mover::merge_stages(State& st, Relayer& relayer) {
  const size_t p = size_t(pick(int(st.pipes.size())));
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
  return true;
}

// A layer cut moves by one or two layers.
bool Mover::move_cut(State& st, Relayer&) {
  const size_t p = size_t(pick(int(st.pipes.size())));
  const int S = static_cast<int>(st.pipes[p].ranks.size());
  if (S < 2) return false;
  const int c = 1 + pick(S - 1), step = (chance(0.5) ? 1 : -1) * (chance(0.75) ? 1 : 2);
  const int moved = st.pipes[p].cuts[c] + step;
  if (moved <= st.pipes[p].cuts[c - 1] || moved >= st.pipes[p].cuts[c + 1]) return false;
  for (size_t q : targets(st, p)) st.pipes[q].cuts[c] = moved;
  return true;
}

// One sample of a stage's split moves from one device to another.
bool Mover::move_split_sample(State& st, Relayer&) {
  const size_t p = size_t(pick(int(st.pipes.size())));
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
  return true;
}

// Samples move from one pipeline to another: one, a micro-batch's worth, or up to half.
bool Mover::move_samples(State& st, Relayer&) {
  const int P = static_cast<int>(st.pipes.size());
  if (P < 2) return false;
  const int a = pick(P), b = pick(P);
  if (a == b) return false;
  Pipe &from = st.pipes[a], &to = st.pipes[b];
  const int options[3] = {1, from.mb, 1 + pick(std::max(1, from.samples / 2))};
  const int take = options[pick(3)];
  if (from.samples - take < 1) return false;
  from.samples -= take;
  to.samples += take;
  return true;
}

// A pipeline's micro-batch becomes the next larger or smaller size that divides its samples.
bool Mover::change_micro_batch(State& st, Relayer&) {
  const size_t p = size_t(pick(int(st.pipes.size())));
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
  return true;
}

bool Mover::idle_device(State& st, Relayer& relayer) {
  const std::vector<int> act = active(st);
  if (act.size() < 2) return false;
  const int r = act[size_t(pick(int(act.size())))];
  if (!remove_rank(st, r, relayer)) return false;
  st.idle.push_back(r);
  return true;
}

// An idle device is brought back (insert_rank decides where).
bool Mover::wake_device(State& st, Relayer& relayer) {
  if (st.idle.empty()) return false;
  const size_t i = size_t(pick(int(st.idle.size())));
  const int r = st.idle[i];
  st.idle.erase(st.idle.begin() + long(i));
  return insert_rank(st, r, relayer);
}

bool Mover::repartition(State& st, Relayer& relayer) {
  for (size_t q : targets(st, size_t(pick(int(st.pipes.size()))))) relayer[q] = true;
  return true;
}

// A pipeline becomes two: when every stage has several devices, either each stage's devices
// are halved (the same depth twice); else its stages are cut into two runs, each then a
// pipeline of all layers. The samples follow the devices.
bool Mover::split_pipeline(State& st, Relayer& relayer) {
  const size_t p = size_t(pick(int(st.pipes.size())));
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
  return true;
}

// Two pipelines of equal depth become one, stage by stage.
bool Mover::merge_pipelines(State& st, Relayer& relayer) {
  const int P = static_cast<int>(st.pipes.size());
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
  return true;
}

const Mover::Move Mover::kMoves[] = {
    {"move a device to another stage, a new stage or a new pipeline", 3, &Mover::move_device},
    {"swap two devices of different types", 2, &Mover::swap_devices},
    {"split a stage of several devices in two", 1, &Mover::split_stage},
    {"merge two neighbouring stages", 1, &Mover::merge_stages},
    {"move a layer cut", 3, &Mover::move_cut},
    {"move one sample of a stage's split", 2, &Mover::move_split_sample},
    {"move samples between pipelines", 3, &Mover::move_samples},
    {"change a pipeline's micro-batch size", 2, &Mover::change_micro_batch},
    {"idle a device", 1, &Mover::idle_device},
    {"bring an idle device back", 1, &Mover::wake_device},
    {"re-partition a pipeline's layers by the DP", 1, &Mover::repartition},
    {"split a pipeline in two", 1, &Mover::split_pipeline},
    {"merge two pipelines of equal depth", 1, &Mover::merge_pipelines},
};

bool Mover::apply(State& st) {
  int total = 0;
  for (const Move& m : kMoves) total += m.weight;
  int roll = pick(total);
  const Move* move = std::begin(kMoves);
  while (roll >= move->weight) roll -= (move++)->weight;
  Relayer relayer(st.pipes.size(), false);
  return (this->*move->run)(st, relayer) && finish(st, relayer);
}

}  // namespace eth::planner::edit

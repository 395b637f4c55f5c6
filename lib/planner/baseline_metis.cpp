// The Metis-style baseline (docs/planner.md, "Baselines"): the search of Metis (Um et al.,
// "Metis: Fast Automatic Distributed Training on Heterogeneous GPUs", USENIX ATC '24; its
// planner's InterStagePlanGenerator and device_group.py) without tensor parallelism, with
// AMP-style replication of the pipeline where the type counts allow it:
//   - P identical pipelines, P dividing every device type's count (P = 1 is Metis itself);
//   - a "node sequence": an order of the device types; each pipeline's devices are laid out in
//     that order (each type's k-th contiguous chunk of ranks for pipeline k);
//   - S stages, 1 <= S <= min(devices per pipeline, layers), and a device-group shape: S stage
//     sizes, powers of two no smaller than variance x max(n / S, S / n), in every order that
//     Metis's permute() yields (it merges the smallest equal groups until at most
//     max_permute_len remain, then takes their distinct permutations); the sequence is cut into
//     consecutive groups, so a stage may hold devices of several types;
//   - a micro-batch count m (Metis's "batches"): every stage's devices split each micro-batch by
//     speed (stage_cost.hpp), each device taking at least one sample and on average at most the
//     largest profiled micro-batch (Metis's max_profiled_batch_size);
//   - layers by the memory-aware DP (partition.hpp), where Metis uses its greedy balancer with
//     memory-driven re-partitioning.
// Candidates are ranked by the analytic model (a bound on compute time prunes those that cannot
// enter the best few before their DP runs); the best few are simulated and the fastest wins.
#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/planner/partition.hpp"
#include "lib/planner/search.hpp"
#include "lib/planner/stage_cost.hpp"

namespace eth::planner {
namespace {

constexpr double kScaleVariance = 0.5;  // Metis's min_group_scale_variance (its generator's default)
constexpr int kMaxPermuteLen = 4;       // Metis's max_permute_len (the value its README runs with)
constexpr size_t kSimulate = 8;         // candidates, best by the analytic model, that are simulated

// Metis's gen_device_group_shapes, size filter and gen_dgroups_recursive: the non-decreasing
// sequences of S powers of two, each at least variance x max(n / S, S / n) (integer division, as
// Metis), summing to n.
std::vector<std::vector<int>> group_size_sets(int n, int S) {
  const double smallest = std::max(n / S, S / n) * kScaleVariance;
  std::vector<int> shapes;
  for (int s = 1; s <= n; s *= 2)
    if (s >= smallest) shapes.push_back(s);
  std::vector<std::vector<int>> out;
  std::vector<int> current;
  std::function<void(int, size_t)> place = [&](int left, size_t from) {
    const long stages_left = S - static_cast<long>(current.size());
    if (stages_left == 0) {
      if (left == 0) out.push_back(current);
      return;
    }
    if (from >= shapes.size() || shapes.back() * stages_left < left || shapes[from] * stages_left > left) return;
    for (size_t i = from; i < shapes.size() && shapes[i] <= left; i++) {
      current.push_back(shapes[i]);
      place(left - shapes[i], i);
      current.pop_back();
    }
  };
  place(n, 0);
  return out;
}

// Metis's permute(): the smallest equal groups are merged pairwise (they stay adjacent) until
// at most kMaxPermuteLen groups remain or no pair merges; then every distinct order of the
// groups, flattened into stage sizes.
std::vector<std::vector<int>> stage_orders(const std::vector<int>& sizes) {
  std::vector<std::vector<int>> groups;
  for (int s : sizes) groups.push_back({s});
  auto total = [](const std::vector<int>& g) { return std::accumulate(g.begin(), g.end(), 0); };
  int reduce = static_cast<int>(groups.size()) - kMaxPermuteLen;
  for (int round = 0; reduce > 0 && round < 64; round++) {
    const int smallest = total(groups[0]);
    size_t leading = 0;
    while (leading < groups.size() && groups[leading] == groups[0]) leading++;
    reduce = std::max(reduce, static_cast<int>(leading / 2));
    std::vector<std::vector<int>> merged;
    for (size_t i = 0; i < groups.size(); i += 2) {
      if (reduce <= static_cast<int>(i / 2)) {
        merged.insert(merged.end(), groups.begin() + long(i), groups.end());
        break;
      }
      if (i + 1 >= groups.size()) {
        merged.push_back(groups[i]);
      } else if (total(groups[i]) == smallest && total(groups[i + 1]) == smallest) {
        merged.push_back(groups[i]);
        merged.back().insert(merged.back().end(), groups[i + 1].begin(), groups[i + 1].end());
      } else {
        merged.push_back(groups[i]);
        merged.push_back(groups[i + 1]);
      }
    }
    groups = std::move(merged);
    const int now = static_cast<int>(groups.size()) - kMaxPermuteLen;
    if (reduce == now) break;  // nothing more merges
    reduce = now;
  }
  std::sort(groups.begin(), groups.end());
  std::vector<std::vector<int>> out;
  do {
    std::vector<int> flat;
    for (const std::vector<int>& g : groups) flat.insert(flat.end(), g.begin(), g.end());
    out.push_back(std::move(flat));
  } while (std::next_permutation(groups.begin(), groups.end()));
  return out;
}

// StageCost::ms of stage s of `stages` at micro-batch b holding c = 1, 2, ... layers (with the
// embedding if first, the head if last), while it fits memory and stays below `limit`; empty
// when not even one does. A stage of a one-stage pipeline holds every layer: each entry is that
// cost.
std::vector<double> stage_cost_by_count(const CostModel& cost, const StageRanks& stages, int s, int b, double limit) {
  const int S = static_cast<int>(stages.size()), L = cost.model().num_layers;
  const StageCost stage(cost, stages, s, b);
  std::vector<double> out;
  if (!stage.feasible()) return out;
  for (int c = 1; c <= L - (S - 1); c++) {
    const LayerRange r = S == 1 ? LayerRange{0, L} : s == 0 ? LayerRange{0, c} : s == S - 1 ? LayerRange{L - c, L} : LayerRange{1, 1 + c};
    if (!stage.fits(r) || stage.ms(r) >= limit) break;
    out.push_back(stage.ms(r));
  }
  if (S == 1 && static_cast<int>(out.size()) < L) out.clear();
  return out;
}

// A bound on what partition_layers gives, found without its O(S L^2) DP: (m - 1) x its slowest
// stage + the sum of its stages, the pipeline's time under the linear model. A layer partition is
// its stages' layer counts, and a stage's cost depends only on its count (and on being first or
// last) and grows with it, so the least achievable maximum is the least T under which the counts
// each stage can afford add up to L; the sum is at least the least sum of stages with none above
// T (stage costs are convex in the count: the slowest of its ranks, each linear). Nothing when no
// partition fits memory or the bound reaches `limit`. Most shapes are dropped by the first test:
// the slowest stage is T and every other stage costs at least its one-layer cost, so the bound is
// at least m T + the other stages' one-layer costs, and T above the cap that makes this `limit`
// means the counts the stages afford at the cap fall short of L (O(S log L), before the O(S L)
// loops).
std::optional<double> partition_bound(const std::vector<const std::vector<double>*>& costs, int L, int m, double limit) {
  const size_t S = costs.size();
  double one_layer = 0, T = 0;
  for (const std::vector<double>* v : costs) one_layer += v->front(), T = std::max(T, v->front());
  const double cap = (limit - (one_layer - T)) / m;
  int room = 0;
  for (const std::vector<double>* v : costs) room += static_cast<int>(std::upper_bound(v->begin(), v->end(), cap) - v->begin());
  if (room < L) return std::nullopt;
  std::vector<size_t> afford(S);
  int total = 0;
  for (size_t s = 0; s < S; s++) {
    afford[s] = size_t(std::upper_bound(costs[s]->begin(), costs[s]->end(), T) - costs[s]->begin());
    total += static_cast<int>(afford[s]);
  }
  while (total < L) {
    double next = std::numeric_limits<double>::infinity();
    for (size_t s = 0; s < S; s++)
      if (afford[s] < costs[s]->size()) next = std::min(next, (*costs[s])[afford[s]]);
    T = next;  // finite: the counts afforded at the cap reach L
    for (size_t s = 0; s < S; s++)
      while (afford[s] < costs[s]->size() && (*costs[s])[afford[s]] <= T) afford[s]++, total++;
  }
  std::vector<size_t> count(S, 1);
  double sum = one_layer;
  for (int layers = static_cast<int>(S); layers < L; layers++) {
    size_t best = S;
    double step = 0;
    for (size_t s = 0; s < S; s++)
      if (count[s] < afford[s] && (best == S || (*costs[s])[count[s]] - (*costs[s])[count[s] - 1] < step)) {
        best = s;
        step = (*costs[s])[count[s]] - (*costs[s])[count[s] - 1];
      }
    sum += step;
    count[best]++;
  }
  const double bound = (m - 1) * T + sum;
  if (bound >= limit) return std::nullopt;
  return bound;
}

struct SegmentHash {
  size_t operator()(const std::array<int, 6>& key) const {
    size_t h = 0;
    for (int v : key) h = h * 1000003u + static_cast<size_t>(v + 1);
    return h;
  }
};

struct Found {
  double analytic_ms = 0;
  Plan plan;
  std::string label;
};

// P identical pipelines of n devices each, and what every type order shares among them.
struct Replicas {
  int P = 0, n = 0;
  std::vector<int> samples;  // per pipeline; the first take the remainder
  std::vector<int> counts;   // micro-batch counts that divide every pipeline's samples
  // Every S, every multiset of group sizes, with its stage orders (the same for every type order).
  std::vector<std::pair<std::vector<int>, std::vector<std::vector<int>>>> size_sets;
  std::map<int, std::vector<double>> rate_prefix;  // b -> sums of the w best rates, w = 0 .. n
};

// One type order's pipelines: each pipeline's ranks laid out in that order.
struct TypeOrder {
  std::vector<std::vector<int>> sequence;  // pipeline k's ranks
  std::string name;                        // "A100-80GB>T4-16GB"
  std::vector<double> memory;              // of pipeline 0's devices, in sequence
  // Each stage's cost by layer count, memoised on what it depends on: its segment of pipeline
  // 0's devices, its neighbours' segments, the stages after it and the micro-batch.
  std::unordered_map<std::array<int, 6>, std::vector<double>, SegmentHash> stage_costs;
};

// device_group_plans' search, one loop per step: replica counts, type orders, group sizes and
// their stage orders, micro-batch counts. Keeps the kSimulate best plans by the analytic model.
class GroupSearch {
 public:
  GroupSearch(const CostModel& cost, const PlanRequest& request, double below_ms)
      : cost_(cost), request_(request), below_ms_(below_ms), L_(cost.model().num_layers),
        max_share_(*std::max_element(request.micro_batches.begin(), request.micro_batches.end())),
        model_bytes_(16 * cost.param_floats({0, L_})) {
    const Topology& topo = cost.topology();
    by_type_.resize(topo.device_types.size());
    for (int r = 0; r < topo.world_size(); r++) by_type_[topo.ranks[r].device_type].push_back(r);
    for (size_t t = 0; t < by_type_.size(); t++)
      if (!by_type_[t].empty()) types_.push_back(static_cast<int>(t));
  }

  // The greatest common divisor of the types' device counts: every replica count divides it.
  int most_replicas() const {
    int g = 0;
    for (int t : types_) g = std::gcd(g, static_cast<int>(by_type_[t].size()));
    return g;
  }

  // The stage orders of group sizes that search_replicas visits for P, in every type order: its
  // work, known before it runs.
  long shapes(const Replicas& rep) const {
    long per_order = 0, type_orders = 1;
    for (const auto& [sizes, orders] : rep.size_sets) per_order += static_cast<long>(orders.size());
    for (size_t k = 2; k <= types_.size(); k++) type_orders *= static_cast<long>(k);
    return per_order * type_orders;
  }

  // Every plan of rep.P identical pipelines, in every type order.
  void search_replicas(Replicas& rep) {
    std::vector<int> order = types_;  // ascending: next_permutation visits every order
    do {
      TypeOrder o = type_order(rep, order);
      for (const auto& [sizes, shapes] : rep.size_sets) {
        const std::vector<int> usable = usable_counts(rep, sizes);
        if (usable.empty()) continue;
        for (const std::vector<int>& shape : shapes) search_shape(rep, o, shape, usable);
      }
    } while (std::next_permutation(order.begin(), order.end()));
  }

  std::vector<Found>& best() { return best_; }

  Replicas replicas(int P) const {
    Replicas rep;
    rep.P = P;
    rep.n = cost_.topology().world_size() / P;
    rep.samples.resize(P);
    for (int k = 0; k < P; k++) rep.samples[k] = request_.global_batch / P + (k < request_.global_batch % P ? 1 : 0);
    for (int m = 1; m <= rep.samples.back(); m++)
      if (std::all_of(rep.samples.begin(), rep.samples.end(), [m](int n) { return n % m == 0; })) rep.counts.push_back(m);
    for (int S = 1; S <= std::min(rep.n, L_); S++)
      for (std::vector<int>& sizes : group_size_sets(rep.n, S))
        if (request_.max_stage_width <= 0 || sizes.back() <= request_.max_stage_width) {
          std::vector<std::vector<int>> orders = stage_orders(sizes);
          rep.size_sets.emplace_back(std::move(sizes), std::move(orders));
        }
    return rep;
  }

 private:
  double threshold() const {
    return best_.size() < kSimulate ? below_ms_ : std::min(below_ms_, best_.back().analytic_ms);
  }

  // A bound that holds for every order of the types and of the groups: a stage's per-layer
  // time at micro-batch b is at least b over its ranks' summed best rates (samples per ms of
  // one layer at any share up to b), so the slowest stage takes at least L b / (the pipeline's
  // summed rates) and the stages together at least L b / (the widest stage's best rates).
  const std::vector<double>& rates(Replicas& rep, int b) const {
    auto [it, fresh] = rep.rate_prefix.try_emplace(b);
    if (fresh) {
      std::vector<double> rate;
      for (int t : types_) {
        double best_rate = 0;
        for (int share = 1; share <= b; share++) {
          const ProfileEntry e = cost_.profile(t).at(share);
          best_rate = std::max(best_rate, share / (e.layer.forward_ms + e.layer.backward_ms));
        }
        rate.insert(rate.end(), by_type_[t].size() / size_t(rep.P), best_rate);
      }
      std::sort(rate.begin(), rate.end(), std::greater<>());
      it->second.assign(1, 0.0);
      for (double v : rate) it->second.push_back(it->second.back() + v);
    }
    return it->second;
  }

  TypeOrder type_order(const Replicas& rep, const std::vector<int>& order) const {
    const Topology& topo = cost_.topology();
    TypeOrder o;
    o.sequence.resize(rep.P);
    for (int t : order) {
      const int c = static_cast<int>(by_type_[t].size()) / rep.P;
      for (int k = 0; k < rep.P; k++)
        o.sequence[k].insert(o.sequence[k].end(), by_type_[t].begin() + long(k * c), by_type_[t].begin() + long((k + 1) * c));
      o.name += (o.name.empty() ? "" : ">") + topo.device_types[t].name;
    }
    for (int r : o.sequence[0]) o.memory.push_back(topo.device_of(r).memory_gb * 1e9);
    return o;
  }

  // The micro-batch counts for which these group sizes may enter the best few.
  std::vector<int> usable_counts(Replicas& rep, const std::vector<int>& sizes) const {
    const int widest = sizes.back(), narrowest = sizes.front();
    std::vector<int> usable;
    for (int m : rep.counts) {
      const int b = rep.samples.front() / m, b_least = rep.samples.back() / m;  // the first pipelines take the remainder
      if (b_least < widest || b / narrowest > max_share_) continue;
      const std::vector<double>& pre = rates(rep, b);
      if ((m - 1) * double(L_) * b / pre[size_t(rep.n)] + double(L_) * b / pre[size_t(widest)] < threshold()) usable.push_back(m);
    }
    return usable;
  }

  // One stage order of the groups, at each usable micro-batch count.
  void search_shape(const Replicas& rep, TypeOrder& o, const std::vector<int>& shape, const std::vector<int>& usable) {
    const int S = static_cast<int>(shape.size());
    double capacity = 0;  // bound: the stages together hold the weights and AdamW state
    for (int s = 0, at = 0; s < S; at += shape[size_t(s)], s++)
      capacity += *std::min_element(o.memory.begin() + at, o.memory.begin() + at + shape[size_t(s)]);
    if (capacity < model_bytes_) return;
    std::optional<StageRanks> stages;  // pipeline 0's, built when first needed
    for (int m : usable) {
      const int b = rep.samples.front() / m;
      // The pipeline's time under the linear model is bounded before the DP runs. A stage
      // costing x makes it at least m x (the slowest stage costs as much), and the threshold
      // only falls, so each stage's costs (memoised with b, hence m) stop below threshold / m.
      std::vector<const std::vector<double>*> per_stage;
      for (int s = 0, at = 0; s < S; at += shape[size_t(s)], s++) {
        const std::array<int, 6> key{at, at + shape[size_t(s)], s > 0 ? at - shape[size_t(s) - 1] : -1,
                                     s + 1 < S ? at + shape[size_t(s)] + shape[size_t(s) + 1] : -1, S - s, b};
        auto [it, fresh] = o.stage_costs.try_emplace(key);
        if (fresh) {
          if (!stages) stages = cut(o.sequence[0], shape);
          it->second = stage_cost_by_count(cost_, *stages, s, b, threshold() / m);
        }
        if (it->second.empty()) break;
        per_stage.push_back(&it->second);
      }
      if (static_cast<int>(per_stage.size()) < S) continue;
      if (!partition_bound(per_stage, L_, m, threshold())) continue;
      if (!stages) stages = cut(o.sequence[0], shape);
      const std::optional<Partition> part = partition_layers(cost_, *stages, b);
      if (!part || (m - 1) * part->max_stage_ms + part->sum_stage_ms >= threshold()) continue;
      add_plan(rep, o, shape, m, part->layers);
    }
  }

  // Pipeline ranks cut into consecutive stages of the shape's sizes.
  static StageRanks cut(const std::vector<int>& ranks, const std::vector<int>& shape) {
    StageRanks stages;
    for (size_t s = 0, at = 0; s < shape.size(); at += size_t(shape[s]), s++)
      stages.emplace_back(ranks.begin() + long(at), ranks.begin() + long(at) + shape[s]);
    return stages;
  }

  // Every pipeline with pipeline 0's layers, kept when all fit and the plan enters the best few.
  void add_plan(const Replicas& rep, const TypeOrder& o, const std::vector<int>& shape, int m,
                const std::vector<LayerRange>& layers) {
    const int S = static_cast<int>(shape.size());
    Found f;
    f.plan.global_batch = request_.global_batch;
    bool fits = true;  // the partition fits pipeline 0's devices; the others' too?
    for (int k = 0; k < rep.P; k++) {
      PlanPipeline pipe{rep.samples[k] / m, m, {}};
      const StageRanks mine = cut(o.sequence[k], shape);
      for (int s = 0; s < S; s++) pipe.stages.push_back(plan_stage(cost_, mine[s], layers[s], pipe.micro_batch));
      fits = fits && choose_recompute(cost_, pipe);
      f.plan.pipelines.push_back(std::move(pipe));
    }
    if (!fits) return;
    f.analytic_ms = cost_.estimate(f.plan).iteration_ms;
    if (f.analytic_ms >= threshold()) return;
    std::string groups;
    for (int s : shape) groups += strprintf("%s%d", groups.empty() ? "" : ",", s);
    f.label = strprintf("metis P=%d %s groups %s b=%d m=%d", rep.P, o.name.c_str(), groups.c_str(), rep.samples.front() / m, m);
    f.plan.source = "eth_plan (" + f.label + ")";
    best_.insert(std::upper_bound(best_.begin(), best_.end(), f.analytic_ms,
                                  [](double v, const Found& x) { return v < x.analytic_ms; }),
                 std::move(f));
    if (best_.size() > kSimulate) best_.pop_back();
  }

  const CostModel& cost_;
  const PlanRequest& request_;
  const double below_ms_;
  const int L_, max_share_;
  const double model_bytes_;
  std::vector<std::vector<int>> by_type_;
  std::vector<int> types_;
  std::vector<Found> best_;  // ascending by analytic_ms
};

}  // namespace

std::vector<Candidate> device_group_plans(const CostModel& cost, const PlanRequest& request, double below_ms,
                                          long max_shapes) {
  GroupSearch search(cost, request, below_ms);
  // Most replicas first: small pipelines are cheap to search and give the bounds a good start.
  const int g = search.most_replicas();
  long shapes = 0;
  for (int P = g; P >= 1 && (max_shapes <= 0 || shapes <= max_shapes); P--) {
    if (g % P || P > request.global_batch) continue;
    Replicas rep = search.replicas(P);
    shapes += search.shapes(rep);
    search.search_replicas(rep);
  }
  std::vector<Candidate> out;
  for (Found& f : search.best()) out.push_back(evaluate_plan(cost, std::move(f.plan), f.label));
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return a.simulation.iteration_ms < b.simulation.iteration_ms;
  });
  return out;
}

Candidate baseline_metis(const CostModel& cost, const PlanRequest& request, const std::string& where) {
  return recompute_only_where_needed(cost, [&](const CostModel& c) {
    std::vector<Candidate> plans = device_group_plans(c, request, std::numeric_limits<double>::infinity(), 0);
    if (plans.empty())
      fail_input(where, "devices",
                 "a Metis-style plan: identical pipelines whose power-of-two device groups hold the model in memory",
                 "no such plan for this topology, model and global batch");
    return std::move(plans.front());
  });
}

}  // namespace eth::planner

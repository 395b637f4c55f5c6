#include "lib/planner/exhaustive.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>

#include "lib/base/strprintf.hpp"
#include "lib/plan/schedule.hpp"
#include "lib/planner/stage_cost.hpp"  // choose_recompute

namespace eth::planner {
namespace {

// ----------------------------------------------------------------------------------------------
// Rank classes.
//
// Ranks of one device type on one node are interchangeable under the cost model and the
// simulator: compute, memory and optimizer time depend on the device type alone, a transfer on
// whether its two ranks share a node (p2p_ms), a reduction on how many owners each node holds
// (allreduce_ms). Swapping two such ranks turns a plan into one with the same simulated time, so
// plans are enumerated over classes (multisets of them), and a plan's ranks are handed out per
// class in ascending order when it is built. This is the first exact symmetry reduction.

struct Classes {
  std::vector<std::vector<int>> ranks;  // per class, ascending
  std::vector<int> type;                // per class, its device type
};

Classes rank_classes(const Topology& topo) {
  Classes c;
  std::map<std::pair<int, int>, int> id;  // (node, device type) -> class, numbered by first rank
  for (int r = 0; r < topo.world_size(); r++) {
    const auto [it, fresh] = id.emplace(std::make_pair(topo.ranks[r].node, topo.ranks[r].device_type),
                                        static_cast<int>(c.ranks.size()));
    if (fresh) {
      c.ranks.emplace_back();
      c.type.push_back(topo.ranks[r].device_type);
    }
    c.ranks[it->second].push_back(r);
  }
  return c;
}

// A multiset of classes: how many ranks of each.
using Counts = std::vector<int>;

int size_of(const Counts& v) {
  int n = 0;
  for (int x : v) n += x;
  return n;
}

// Calls fn(u) for every u with 0 <= u <= v componentwise (zero included), in odometer order
// (class 0 counts fastest).
void for_each_subset(const Counts& v, const std::function<void(const Counts&)>& fn) {
  Counts u(v.size(), 0);
  for (;;) {
    fn(u);
    size_t c = 0;
    while (c < v.size() && u[c] == v[c]) u[c++] = 0;
    if (c == v.size()) return;
    u[c]++;
  }
}

// Every composition of `total` into `parts` positive parts, in lexicographic order.
void for_each_composition(int total, int parts, const std::function<void(const std::vector<int>&)>& fn) {
  std::vector<int> x(parts, 0);
  std::function<void(int, int)> place = [&](int k, int left) {
    if (k == parts - 1) {
      x[k] = left;
      fn(x);
      return;
    }
    for (int take = 1; take <= left - (parts - 1 - k); take++) {
      x[k] = take;
      place(k + 1, left - take);
    }
  };
  if (parts >= 1 && total >= parts) place(0, total);
}

// ----------------------------------------------------------------------------------------------
// One pipeline, in class terms.
//
// A stage is a sequence of slots (class, samples of each micro-batch): the order of a stage's
// ranks matters, because rank i takes the samples after those of ranks 0..i-1 and a boundary's
// transfers follow which ranks hold the same samples on both sides (boundary_ms). Enumerating
// the distinct slot sequences (orders of the class multiset times compositions of the
// micro-batch) covers every order and split of the ranks exactly once up to interchangeable
// ranks.

struct Slot {
  int cls = 0;
  int samples = 0;
};
using StageSlots = std::vector<Slot>;

struct PipelineConfig {
  int micro_batch = 1;
  int micro_batches = 1;
  std::vector<StageSlots> stages;
  std::vector<LayerRange> layers;  // per stage
  double alone_ms = 0;             // simulated iteration of this pipeline alone: its plan's time
                                   // when it is a plan's only pipeline
  double bound_ms = 0;             // no plan holding this pipeline simulates faster
};

// Every slot sequence of the ranks `u` sharing a micro-batch of b samples, each rank at least one.
std::vector<StageSlots> stage_arrangements(const Counts& u, int b) {
  std::vector<StageSlots> out;
  Counts left = u;
  StageSlots slots;
  std::function<void(int, int)> place = [&](int ranks_left, int samples_left) {
    if (ranks_left == 0) {
      out.push_back(slots);
      return;
    }
    for (size_t c = 0; c < left.size(); c++) {
      if (left[c] == 0) continue;
      left[c]--;
      const int most = ranks_left == 1 ? samples_left : samples_left - (ranks_left - 1);
      for (int s = ranks_left == 1 ? samples_left : 1; s <= most; s++) {
        slots.push_back({static_cast<int>(c), s});
        place(ranks_left - 1, samples_left - s);
        slots.pop_back();
      }
      left[c]++;
    }
  };
  if (size_of(u) <= b) place(size_of(u), b);
  return out;
}

// The plan's pipeline: ranks handed out per class from next[class] on (advanced), each stage with
// the least recomputation that fits (every configuration enumerated fits under one).
PlanPipeline realise(const CostModel& cost, const PipelineConfig& config, const Classes& classes, std::vector<int>& next) {
  PlanPipeline pipe;
  pipe.micro_batch = config.micro_batch;
  pipe.micro_batches = config.micro_batches;
  for (size_t s = 0; s < config.stages.size(); s++) {
    PlanStage stage;
    stage.layers = config.layers[s];
    for (const Slot& slot : config.stages[s]) {
      stage.ranks.push_back(classes.ranks[slot.cls][next[slot.cls]++]);
      stage.split.push_back(slot.samples);
    }
    if (stage.ranks.size() == 1) stage.split.clear();  // one rank takes the whole micro-batch
    pipe.stages.push_back(std::move(stage));
  }
  choose_recompute(cost, pipe);
  return pipe;
}

// ----------------------------------------------------------------------------------------------
// The enumerator.

class Enumerator {
 public:
  Enumerator(const CostModel& cost, const PlanRequest& request, const ExhaustiveLimits& limits)
      : cost_(cost), limits_(limits), classes_(rank_classes(cost.topology())), global_batch_(request.global_batch) {
    L_ = cost.model().num_layers;
    max_b_ = limits.max_micro_batch > 0 ? limits.max_micro_batch
                                        : *std::max_element(request.micro_batches.begin(), request.micro_batches.end());
    for (const std::vector<int>& r : classes_.ranks) all_.push_back(static_cast<int>(r.size()));
    radix_.assign(all_.size(), 1);
    for (size_t c = 1; c < all_.size(); c++) radix_[c] = radix_[c - 1] * (all_[c - 1] + 1);
  }

  // Every idle set (none first), every partition of the rest into pipelines, every split of the
  // batch among them; each combination of their pipelines' configurations is scored.
  ExhaustiveResult run() {
    for_each_subset(all_, [&](const Counts& idle) {
      if (size_of(idle) == size_of(all_)) return;  // at least one rank trains
      if (!limits_.allow_idle && size_of(idle) > 0) return;
      Counts active(all_.size());
      for (size_t c = 0; c < all_.size(); c++) active[c] = all_[c] - idle[c];
      std::vector<Counts> parts;
      partitions(active, code(active), parts);
    });
    ExhaustiveResult result;
    result.stats = stats_;
    if (best_) result.best = evaluate_plan(cost_, *best_, "exhaustive optimum");
    return result;
  }

 private:
  // Position of a multiset in a fixed total order (mixed radix): pipelines are unordered, so a
  // partition is enumerated once, with its parts in non-increasing code. The second exact
  // symmetry reduction.
  long code(const Counts& v) const {
    long k = 0;
    for (size_t c = 0; c < v.size(); c++) k += v[c] * radix_[c];
    return k;
  }

  // Every multiset partition of `left` into parts of code at most `most`, appended to `parts`.
  void partitions(const Counts& left, long most, std::vector<Counts>& parts) {
    if (size_of(left) == 0) {
      std::vector<int> samples;
      sample_splits(parts, samples, global_batch_);
      return;
    }
    if (limits_.max_pipelines > 0 && static_cast<int>(parts.size()) >= limits_.max_pipelines) return;
    if (static_cast<int>(parts.size()) >= global_batch_) return;  // every pipeline takes a sample
    for_each_subset(left, [&](const Counts& u) {
      if (size_of(u) == 0 || code(u) > most) return;
      Counts rest(left.size());
      for (size_t c = 0; c < left.size(); c++) rest[c] = left[c] - u[c];
      parts.push_back(u);
      partitions(rest, code(u), parts);
      parts.pop_back();
    });
  }

  // Every assignment of samples (at least one each) to the pipelines; two pipelines of the same
  // ranks take non-increasing samples (they are interchangeable).
  void sample_splits(const std::vector<Counts>& parts, std::vector<int>& samples, int left) {
    const size_t k = samples.size();
    if (k == parts.size()) {
      if (left == 0) combine_all(parts, samples);
      return;
    }
    const int others = static_cast<int>(parts.size() - k - 1);
    int most = left - others;
    if (k > 0 && parts[k] == parts[k - 1]) most = std::min(most, samples[k - 1]);
    for (int n = most; n >= 1; n--) {
      samples.push_back(n);
      sample_splits(parts, samples, left - n);
      samples.pop_back();
    }
  }

  // Every plan of these pipelines: the product of their configuration lists, sorted by bound, in
  // depth-first order; two pipelines of the same ranks and samples take non-decreasing indices.
  // A prefix whose bound is no better than the best plan so far is cut with everything after it
  // (every plan below it is at least as slow): exact, and counted.
  void combine_all(const std::vector<Counts>& parts, const std::vector<int>& samples) {
    const size_t P = parts.size();
    std::vector<const std::vector<PipelineConfig>*> lists;
    std::vector<bool> same(P, false);
    for (size_t k = 0; k < P; k++) {
      lists.push_back(&configs(parts[k], samples[k]));
      if (lists.back()->empty()) return;
      same[k] = k > 0 && parts[k] == parts[k - 1] && samples[k] == samples[k - 1];
    }
    // completions[k][j]: plans whose pipeline k takes index j or later, pipelines after k free.
    std::vector<std::vector<double>> completions(P);
    for (size_t k = P; k-- > 0;) {
      const size_t n = lists[k]->size();
      completions[k].assign(n + 1, 0);
      for (size_t j = n; j-- > 0;)
        completions[k][j] = completions[k][j + 1] + (k + 1 == P ? 1 : completions[k + 1][same[k + 1] ? j : 0]);
    }
    stats_.plans += completions[0][0];
    std::vector<size_t> pick(P, 0);
    std::function<void(size_t, double)> descend = [&](size_t k, double bound) {
      if (k == P) {
        score(lists, pick);
        return;
      }
      const std::vector<PipelineConfig>& list = *lists[k];
      for (size_t j = same[k] ? pick[k - 1] : 0; j < list.size(); j++) {
        const double b = std::max(bound, list[j].bound_ms);
        if (limits_.prune && best_ && P > 1 && b >= best_ms_) {
          stats_.plans_pruned += completions[k][j];
          return;
        }
        pick[k] = j;
        descend(k + 1, b);
      }
    };
    descend(0, 0);
  }

  // One plan: a lone pipeline's replay is its plan's; several are simulated together.
  void score(const std::vector<const std::vector<PipelineConfig>*>& lists, const std::vector<size_t>& pick) {
    stats_.plans_simulated++;
    const double alone = (*lists[0])[pick[0]].alone_ms;
    if (lists.size() == 1 && best_ && alone >= best_ms_) return;
    Plan plan;
    plan.source = "exhaustive";
    plan.global_batch = global_batch_;
    std::vector<int> next(all_.size(), 0);
    for (size_t k = 0; k < lists.size(); k++) plan.pipelines.push_back(realise(cost_, (*lists[k])[pick[k]], classes_, next));
    for (size_t c = 0; c < all_.size(); c++)
      for (int i = next[c]; i < all_[c]; i++) plan.idle.push_back(classes_.ranks[c][i]);
    std::sort(plan.idle.begin(), plan.idle.end());
    const double ms = lists.size() == 1 ? alone : simulate(cost_, plan).iteration_ms;
    if (!best_ || ms < best_ms_) {
      best_ms_ = ms;
      best_ = std::move(plan);
    }
  }

  // Every configuration of a pipeline of ranks `v` taking n samples that fits memory, each
  // replayed alone, sorted by bound (stable: ties keep the enumeration order). Memoised.
  const std::vector<PipelineConfig>& configs(const Counts& v, int n) {
    const auto key = std::make_pair(v, n);
    auto it = configs_.find(key);
    if (it != configs_.end()) return it->second;
    std::vector<PipelineConfig> out;
    const int most_stages = std::min({L_, size_of(v), limits_.max_stages > 0 ? limits_.max_stages : L_});
    for (int S = 1; S <= most_stages; S++)
      for_each_stage_sets(v, S, [&](const std::vector<Counts>& sets) { configs_of_stages(sets, n, out); });
    std::stable_sort(out.begin(), out.end(),
                     [](const PipelineConfig& a, const PipelineConfig& b) { return a.bound_ms < b.bound_ms; });
    return configs_.emplace(key, std::move(out)).first->second;
  }

  // Every ordered sequence of S non-empty multisets that together make `v` (a pipeline's stages
  // before their ranks are ordered).
  void for_each_stage_sets(const Counts& v, int S, const std::function<void(const std::vector<Counts>&)>& fn) {
    std::vector<Counts> sets;
    std::function<void(const Counts&)> place = [&](const Counts& left) {
      const int stages_left = S - static_cast<int>(sets.size());
      if (stages_left == 1) {
        sets.push_back(left);
        fn(sets);
        sets.pop_back();
        return;
      }
      for_each_subset(left, [&](const Counts& u) {
        const int n = size_of(u);
        if (n == 0 || size_of(left) - n < stages_left - 1) return;
        Counts rest(left.size());
        for (size_t c = 0; c < left.size(); c++) rest[c] = left[c] - u[c];
        sets.push_back(u);
        place(rest);
        sets.pop_back();
      });
    };
    place(v);
  }

  // Every micro-batch size, layer split and per-stage slot sequence for these stage multisets.
  void configs_of_stages(const std::vector<Counts>& sets, int n, std::vector<PipelineConfig>& out) {
    const int S = static_cast<int>(sets.size());
    int widest = 0;
    for (const Counts& u : sets) widest = std::max(widest, size_of(u));
    if (limits_.max_stage_width > 0 && widest > limits_.max_stage_width) return;
    if (limits_.one_type_per_stage && !std::all_of(sets.begin(), sets.end(), [&](const Counts& u) { return one_type(u); }))
      return;
    for (int b = 1; b <= std::min(n, max_b_); b++) {
      if (n % b != 0 || b < widest) continue;
      const int m = n / b;
      std::vector<const std::vector<StageSlots>*> arrangements;
      for (const Counts& u : sets) arrangements.push_back(&arranged(u, b));
      for_each_composition(L_, S, [&](const std::vector<int>& counts) {
        std::vector<LayerRange> layers;
        for (int s = 0, at = 0; s < S; at += counts[s++]) layers.push_back({at, at + counts[s]});
        // The slot sequences of each stage that fit memory with its 1F1B activations in flight.
        std::vector<std::vector<const StageSlots*>> fitting(S);
        for (int s = 0; s < S; s++) {
          for (const StageSlots& slots : *arrangements[s])
            if (fits(slots, layers[s], activation_slots(s, S, m))) fitting[s].push_back(&slots);
          if (fitting[s].empty()) return;
        }
        PipelineConfig config;
        config.micro_batch = b;
        config.micro_batches = m;
        config.layers = layers;
        config.stages.resize(S);
        std::function<void(int)> product = [&](int s) {
          if (s == S) {
            if ((!limits_.stages_by_memory || in_search_order(config.stages)) &&
                (!limits_.types_in_rank_order || in_rank_order(config.stages)))
              out.push_back(price(config, n));
            return;
          }
          for (const StageSlots* slots : fitting[s]) {
            config.stages[s] = *slots;
            product(s + 1);
          }
        };
        product(0);
      });
    }
  }

  bool one_type(const Counts& u) const {
    int type = -1;
    for (size_t c = 0; c < u.size(); c++) {
      if (u[c] == 0) continue;
      if (type >= 0 && classes_.type[c] != type) return false;
      type = classes_.type[c];
    }
    return true;
  }

  // The pipeline's ranks, stage after stage, ordered as search_hpp orders them (device memory
  // descending, then device type index).
  bool in_search_order(const std::vector<StageSlots>& stages) const {
    const Topology& topo = cost_.topology();
    auto key = [&](const Slot& s) {
      const int type = classes_.type[s.cls];
      return std::make_pair(-topo.device_types[type].memory_gb, type);
    };
    const Slot* prev = nullptr;
    for (const StageSlots& stage : stages)
      for (const Slot& slot : stage) {
        if (prev && key(slot) < key(*prev)) return false;
        prev = &slot;
      }
    return true;
  }

  // The pipeline's ranks of each device type, stage after stage, in ascending rank order (classes
  // of one type are numbered in rank order, and a class's ranks are handed out ascending).
  bool in_rank_order(const std::vector<StageSlots>& stages) const {
    std::vector<int> last(cost_.topology().device_types.size(), -1);  // per type: last class seen
    for (const StageSlots& stage : stages)
      for (const Slot& slot : stage) {
        int& seen = last[classes_.type[slot.cls]];
        if (slot.cls < seen) return false;
        seen = slot.cls;
      }
    return true;
  }

  const std::vector<StageSlots>& arranged(const Counts& u, int b) {
    const auto key = std::make_pair(u, b);
    auto it = arrangements_.find(key);
    if (it == arrangements_.end()) it = arrangements_.emplace(key, stage_arrangements(u, b)).first;
    return it->second;
  }

  // Every rank of the stage fits its device (the cost model's memory, as validate_plan checks
  // it through the predicted memory), with the least recomputation that makes it fit
  // (realise sets it, as the search does).
  bool fits(const StageSlots& slots, LayerRange layers, int in_flight) const {
    return std::all_of(slots.begin(), slots.end(), [&](const Slot& s) {
      return cost_.lightest_recompute(classes_.type[s.cls], layers, s.samples, in_flight).has_value();
    });
  }

  // Replays the pipeline alone, for its time and its bound. The simulator replays each
  // pipeline's 1F1B without looking at the others, so the pipeline's last backward ends at the
  // same time (pipeline_ms) in every plan that holds it; a plan ends no earlier than any rank's
  // last backward plus that rank's optimizer step (iteration = max over ranks of max(compute end,
  // reductions end) + optimizer). So no plan holding this pipeline simulates faster than
  // pipeline_ms + the least optimizer step of its ranks, in floating point too (the same terms,
  // and rounding is monotone).
  PipelineConfig price(PipelineConfig config, int n) {
    stats_.pipelines++;
    Plan plan;
    plan.global_batch = n;
    std::vector<int> next(all_.size(), 0);
    plan.pipelines.push_back(realise(cost_, config, classes_, next));
    const Simulation sim = simulate(cost_, plan);
    double least_optimizer = -1;
    for (const PlanStage& stage : plan.pipelines[0].stages)
      for (int r : stage.ranks) {
        const double opt = cost_.optimizer_ms(cost_.topology().ranks[r].device_type, cost_.param_floats(stage.layers));
        least_optimizer = least_optimizer < 0 ? opt : std::min(least_optimizer, opt);
      }
    config.alone_ms = sim.iteration_ms;
    config.bound_ms = sim.pipeline_ms[0] + least_optimizer;
    return config;
  }

  const CostModel& cost_;
  const ExhaustiveLimits& limits_;
  const Classes classes_;
  const int global_batch_;
  int L_ = 0, max_b_ = 1;
  Counts all_;                // ranks per class in the cluster
  std::vector<long> radix_;   // for code()
  std::map<std::pair<Counts, int>, std::vector<PipelineConfig>> configs_;
  std::map<std::pair<Counts, int>, std::vector<StageSlots>> arrangements_;
  ExhaustiveStats stats_;
  std::optional<Plan> best_;
  double best_ms_ = 0;
};

}  // namespace

ExhaustiveResult exhaustive_best(const CostModel& cost, const PlanRequest& request, const ExhaustiveLimits& limits) {
  const int world = cost.topology().world_size(), L = cost.model().num_layers;
  if (world > limits.max_devices || L > limits.max_layers || request.global_batch > limits.max_global_batch)
    throw std::invalid_argument(strprintf("exhaustive_best: %d devices, %d layers, global batch %d exceed the limits "
                                          "%d, %d, %d", world, L, request.global_batch, limits.max_devices,
                                          limits.max_layers, limits.max_global_batch));
  if (request.global_batch < 1 || request.micro_batches.empty())
    throw std::invalid_argument("exhaustive_best: needs a positive global batch and micro-batch sizes");
  return Enumerator(cost, request, limits).run();
}

std::string plan_outline(const Plan& plan, const Topology& topology) {
  auto name = [&](int r) { return strprintf("%d:%s@n%d", r, topology.device_of(r).name.c_str(), topology.ranks[r].node); };
  std::string out;
  for (const PlanPipeline& pipe : plan.pipelines) {
    if (!out.empty()) out += "; ";
    out += strprintf("%dx%d [", pipe.micro_batch, pipe.micro_batches);
    for (size_t s = 0; s < pipe.stages.size(); s++) {
      const PlanStage& st = pipe.stages[s];
      if (s > 0) out += " | ";
      for (size_t i = 0; i < st.ranks.size(); i++) {
        if (i > 0) out += "+";
        out += name(st.ranks[i]);
      }
      if (st.ranks.size() > 1) {
        out += " ";
        for (size_t i = 0; i < st.split.size(); i++) out += strprintf(i > 0 ? ":%d" : "%d", st.split[i]);
      }
      out += strprintf(" L%d-%d", st.layers.begin, st.layers.end);
    }
    out += "]";
  }
  if (!plan.idle.empty()) {
    out += "; idle";
    for (int r : plan.idle) out += " " + name(r);
  }
  return out;
}

AuditCase random_audit_case(uint64_t seed, const std::vector<DeviceType>& catalog, const AuditShape& shape) {
  std::mt19937_64 rng(seed);  // fixed algorithm; draws by modulo, so the cases are the same everywhere
  auto draw = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
  AuditCase c;
  Topology& t = c.topology;
  t.source = strprintf("audit-case-%llu", static_cast<unsigned long long>(seed));
  // Device types: distinct entries of the catalog.
  const int devices = draw(shape.min_devices, shape.max_devices);
  const int types = draw(1, std::min({shape.max_types, devices, static_cast<int>(catalog.size())}));
  std::vector<int> pool(catalog.size());
  for (size_t i = 0; i < pool.size(); i++) pool[i] = static_cast<int>(i);
  for (int k = 0; k < types; k++) {
    std::swap(pool[k], pool[k + draw(0, static_cast<int>(pool.size()) - 1 - k)]);
    t.device_types.push_back(catalog[pool[k]]);
  }
  // Every type at least once, the rest at random; nodes hold consecutive ranks.
  std::vector<int> type_of(devices);
  for (int d = 0; d < devices; d++) type_of[d] = d < types ? d : draw(0, types - 1);
  std::sort(type_of.begin(), type_of.end());
  for (int d = devices - 1; d > 0; d--) std::swap(type_of[d], type_of[draw(0, d)]);
  const int nodes = draw(1, std::min(shape.max_nodes, devices));
  std::vector<int> cuts;  // first rank of nodes 1.., distinct
  for (int at = 1; at < devices; at++) cuts.push_back(at);
  for (int k = 0; k < nodes - 1; k++) std::swap(cuts[k], cuts[k + draw(0, static_cast<int>(cuts.size()) - 1 - k)]);
  cuts.resize(nodes - 1);
  std::sort(cuts.begin(), cuts.end());
  std::vector<int> first = {0};
  first.insert(first.end(), cuts.begin(), cuts.end());
  const Link links[] = {{"nvlink", 300, 2}, {"pcie", 16, 5}, {"pcie", 32, 5}};
  const Link networks[] = {{"infiniband", 25, 3}, {"infiniband", 12.5, 3}, {"ethernet", 3, 20}};
  t.network = networks[draw(0, 2)];
  for (int n = 0; n < nodes; n++) {
    Node node{strprintf("node%d", n), links[draw(0, 2)], {}, first[n]};
    const int end = n + 1 < nodes ? first[n + 1] : devices;
    for (int r = first[n]; r < end; r++) {
      node.devices.push_back(type_of[r]);
      t.ranks.push_back({n, r - first[n], type_of[r]});
    }
    t.nodes.push_back(node);
  }
  // The model and the request.
  const int C = shape.channels[draw(0, static_cast<int>(shape.channels.size()) - 1)];
  const int L = draw(shape.min_layers, shape.max_layers);
  c.model = gpt2_config(strprintf("gpt-L%d-C%d", L, C), 50257, 50304, 1024, L, C / 128, C);
  c.seq_len = 1024;
  c.request.global_batch = draw(shape.min_batch, shape.max_batch);
  c.request.micro_batches = shape.micro_batches;
  std::string who;
  for (int k = 0; k < types; k++) {
    const int n = static_cast<int>(std::count(type_of.begin(), type_of.end(), k));
    who += strprintf("%s%dx%s", k ? "+" : "", n, t.device_types[k].name.c_str());
  }
  c.name = strprintf("%s/%dn L%d C%d B%d", who.c_str(), nodes, L, C, c.request.global_batch);
  return c;
}

}  // namespace eth::planner

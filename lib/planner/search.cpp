#include "lib/planner/search.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/plan/batch_balance.hpp"
#include "lib/planner/local_search.hpp"
#include "lib/planner/partition.hpp"
#include "lib/planner/sharding_choice.hpp"

namespace eth::planner {
namespace {

// A pipeline before samples are assigned: its stages' ranks and layer partition at b0.
struct Shape {
  StageRanks stages;
  Partition part;
};

// One way to lay out a group of device types: its pipelines and their stage width.
struct GroupOption {
  std::vector<Shape> shapes;
  int width = 1;
};

// A set of pipelines with their samples.
struct Layout {
  std::string label;
  int b0 = 1;
  std::vector<int> idle;  // ranks the layout leaves out
  std::vector<Shape> shapes;
  std::vector<int> samples;
  double model_ms = 0;  // linear model: (chunks - 1) * max stage + sum of stages
};

// Water-filling (lib/plan/batch_balance.hpp) over the shapes, all at micro-batch b0.
std::optional<std::vector<int>> balance_samples(const std::vector<Shape>& shapes, int global_batch, int b0, double* ms) {
  std::vector<PipelineRate> rates;
  for (const Shape& s : shapes) rates.push_back({s.part.max_stage_ms, s.part.sum_stage_ms, b0, 1});
  return eth::balance_samples(rates, global_batch, ms);
}

std::vector<int> equal_samples(int P, int global_batch) {
  std::vector<int> n(P);
  for (int k = 0; k < P; k++) n[k] = global_batch / P + (k < global_batch % P ? 1 : 0);
  return n;
}

// The micro-batch (a divisor of n, at most b0, at least the widest stage) that makes the
// pipeline fastest while every stage fits; nothing if there is none.
std::optional<PlanPipeline> make_pipeline(const CostModel& cost, const Shape& shape, int n, int b0) {
  std::optional<PlanPipeline> best;
  double best_ms = 0;
  for (int b = std::min(b0, n); b >= 1; b--) {
    if (n % b) continue;
    const int m = n / b;
    double worst = 0, sum = 0;
    bool fits = true;
    for (size_t s = 0; s < shape.stages.size() && fits; s++) {
      const StageCost stage(cost, shape.stages, static_cast<int>(s), b);
      fits = stage.feasible() && stage.fits(shape.part.layers[s]);
      if (!fits) break;
      worst = std::max(worst, stage.ms(shape.part.layers[s]));
      sum += stage.ms(shape.part.layers[s]);
    }
    if (!fits) continue;
    const double total = (m - 1) * worst + sum;
    if (!best || total < best_ms) {
      best_ms = total;
      best = PlanPipeline{b, m, {}};
      for (size_t s = 0; s < shape.stages.size(); s++)
        best->stages.push_back(plan_stage(cost, shape.stages[s], shape.part.layers[s], b));
      choose_recompute(cost, *best);  // fits: it did with S - s >= the slots in flight
    }
  }
  return best;
}

std::optional<Plan> make_plan(const CostModel& cost, const Layout& layout, int global_batch) {
  Plan plan;
  plan.source = "eth_plan (" + layout.label + ")";
  plan.global_batch = global_batch;
  plan.idle = layout.idle;
  for (size_t k = 0; k < layout.shapes.size(); k++) {
    std::optional<PlanPipeline> pipe = make_pipeline(cost, layout.shapes[k], layout.samples[k], layout.b0);
    if (!pipe) return std::nullopt;
    plan.pipelines.push_back(std::move(*pipe));
  }
  return plan;
}

bool same_plan(const Plan& a, const Plan& b) {
  if (a.pipelines.size() != b.pipelines.size()) return false;
  for (size_t p = 0; p < a.pipelines.size(); p++) {
    const PlanPipeline &x = a.pipelines[p], &y = b.pipelines[p];
    if (x.micro_batch != y.micro_batch || x.micro_batches != y.micro_batches || x.stages.size() != y.stages.size())
      return false;
    for (size_t s = 0; s < x.stages.size(); s++)
      if (x.stages[s].ranks != y.stages[s].ranks || !(x.stages[s].layers == y.stages[s].layers) ||
          x.stages[s].split != y.stages[s].split)
        return false;
  }
  return true;
}

// Which device type a pipeline's first stages take: the largest memory first (early stages keep
// more micro-batches in flight), or the slowest first (the last stage also runs the LM head, so
// the fastest devices take it; Metis's plans look like this).
enum class StageOrder { memory_first, slowest_first };

// Layer partitions by what they depend on (Searcher::partition): shared by every search of one
// cost model, whatever its idle ranks and stage order.
using PartitionMemo = std::map<std::string, std::optional<Partition>>;

class Searcher {
 public:
  // Plans for every rank but `idle`, with stages in `order`.
  Searcher(const CostModel& cost, const PlanRequest& request, PartitionMemo& memo, std::vector<int> idle = {},
           StageOrder order = StageOrder::memory_first)
      : cost_(cost), request_(request), idle_(std::move(idle)), order_(order), memo_(memo) {
    const Topology& topo = cost.topology();
    by_type_.resize(topo.device_types.size());
    for (int r = 0; r < topo.world_size(); r++)
      if (std::find(idle_.begin(), idle_.end(), r) == idle_.end()) by_type_[topo.ranks[r].device_type].push_back(r);
    active_ = topo.world_size() - static_cast<int>(idle_.size());
    for (size_t t = 0; t < topo.device_types.size(); t++) {
      const ProfileEntry e = cost.profile(static_cast<int>(t)).at(1);
      speed_.push_back(1.0 / (e.layer.forward_ms + e.layer.backward_ms));  // layers per ms at one sample
    }
  }

  // Pipelines of `group`'s device types, each type's ranks dealt in P contiguous chunks;
  // ranks in the stage order, then type; each run of one type grouped into stages of at most
  // `width` ranks. Nothing if any pipeline does not fit.
  std::optional<std::vector<Shape>> deal(const std::vector<int>& group, int P, int b0, int width) {
    const Topology& topo = cost_.topology();
    const double model_bytes = 16 * cost_.param_floats({0, cost_.model().num_layers});
    std::vector<Shape> shapes;
    for (int k = 0; k < P; k++) {  // pipeline by pipeline, so that a misfit is found early
      std::vector<int> ranks;
      for (int t : group) {
        const std::vector<int>& of_type = by_type_[t];
        const size_t n = of_type.size();
        ranks.insert(ranks.end(), of_type.begin() + long(k * n / P), of_type.begin() + long((k + 1) * n / P));
      }
      if (ranks.empty()) return std::nullopt;
      std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
        const DeviceType &x = topo.device_of(a), &y = topo.device_of(b);
        const int ta = topo.ranks[a].device_type, tb = topo.ranks[b].device_type;
        if (order_ == StageOrder::slowest_first) {
          const double sa = speed_[ta], sb = speed_[tb];
          return sa != sb ? sa < sb : ta < tb;
        }
        return x.memory_gb != y.memory_gb ? x.memory_gb > y.memory_gb : ta < tb;
      });
      StageRanks stages = group_into_stages(ranks, width);
      if (static_cast<int>(stages.size()) > cost_.model().num_layers) return std::nullopt;
      // Quick bound before the DP: the stages together must hold the weights and AdamW state.
      double capacity = 0;
      for (const std::vector<int>& stage : stages) capacity += topo.device_of(stage.back()).memory_gb * 1e9;
      if (capacity < model_bytes) return std::nullopt;
      std::optional<Partition> part = partition(stages, b0);
      if (!part) return std::nullopt;
      shapes.push_back({std::move(stages), std::move(*part)});
    }
    return shapes;
  }

  // Each run of same-type ranks as ceil(run / width) stages of nearly equal size.
  StageRanks group_into_stages(const std::vector<int>& ranks, int width) const {
    const Topology& topo = cost_.topology();
    StageRanks stages;
    for (size_t begin = 0, end = 0; begin < ranks.size(); begin = end) {
      const int type = topo.ranks[ranks[begin]].device_type;
      for (end = begin; end < ranks.size() && topo.ranks[ranks[end]].device_type == type; end++) {}
      const size_t run = end - begin, count = (run + width - 1) / width;
      for (size_t k = 0; k < count; k++)
        stages.emplace_back(ranks.begin() + long(begin + k * run / count), ranks.begin() + long(begin + (k + 1) * run / count));
    }
    return stages;
  }

  // Memoised on what the partition depends on (the device types of each stage and the cost of
  // each boundary, in a binary key): identical pipelines share it.
  std::optional<Partition> partition(const StageRanks& stages, int b0) {
    const Topology& topo = cost_.topology();
    std::string key;
    auto append = [&key](auto value) { key.append(reinterpret_cast<const char*>(&value), sizeof value); };
    append(b0);
    std::optional<PlanStage> here, next;  // stages are at most b0 wide (widths()), so every rank has samples
    for (size_t s = 0; s < stages.size(); s++) {
      append(static_cast<int>(stages[s].size()));
      for (int r : stages[s]) append(topo.ranks[r].device_type);
      if (s + 1 < stages.size()) {
        if (!here) here = plan_stage(cost_, stages[s], {0, 1}, b0);
        next = plan_stage(cost_, stages[s + 1], {0, 1}, b0);
        append(cost_.boundary_ms(*here, *next, b0));
        here = std::move(next);
      }
    }
    auto it = memo_.find(key);
    if (it == memo_.end()) it = memo_.emplace(key, partition_layers(cost_, stages, b0)).first;
    return it->second;
  }

  // Stage widths worth trying for P pipelines of `group`: 1, powers of two, and the widest
  // run of one type a pipeline gets, up to max_width (0: no limit) and b0 (every rank of a
  // stage takes at least one sample of a micro-batch).
  std::vector<int> widths(const std::vector<int>& group, int P, int b0, int max_width) const {
    int widest = 1;
    for (int t : group) widest = std::max(widest, (static_cast<int>(by_type_[t].size()) + P - 1) / P);
    if (max_width > 0) widest = std::min(widest, max_width);
    widest = std::min(widest, b0);
    std::vector<int> out;
    for (int w = 1; w < widest; w *= 2) out.push_back(w);
    out.push_back(widest);
    return out;
  }

  // The best few (pipeline count, stage width) options of one group, by the time to run its
  // share of the batch.
  std::vector<GroupOption> group_options(const std::vector<int>& group, int b0, int keep, int max_width) {
    int n = 0;
    for (int t : group) n += static_cast<int>(by_type_[t].size());
    const int share = std::max(1, int(double(request_.global_batch) * n / active_));
    std::vector<std::pair<double, GroupOption>> found;
    double best = 0;
    int since_better = 0;
    // Shallowest pipelines first; stop after 8 feasible pipeline counts without improvement.
    for (int P = n; P >= 1 && since_better < 8; P--) {
      bool feasible = false, better = false;
      for (int width : widths(group, P, b0, max_width)) {
        std::optional<std::vector<Shape>> shapes = deal(group, P, b0, width);
        if (!shapes) continue;
        double ms = 0;
        if (!balance_samples(*shapes, std::max(share, P * b0), b0, &ms)) continue;
        feasible = true;
        if (found.empty() || ms < best) {
          best = ms;
          better = true;
        }
        found.push_back({ms, {std::move(*shapes), width}});
      }
      if (feasible) since_better = better ? 0 : since_better + 1;
    }
    std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<GroupOption> out;
    for (size_t i = 0; i < found.size() && static_cast<int>(i) < keep; i++) out.push_back(std::move(found[i].second));
    return out;
  }

  // Every combination of the groups' best options, for every grouping of the device types and
  // every micro-batch size, with stages of at most max_width ranks (0: no limit); fastest first
  // by the linear model.
  std::vector<Layout> layouts(int max_width) {
    std::vector<int> types;
    for (size_t t = 0; t < by_type_.size(); t++)
      if (!by_type_[t].empty()) types.push_back(static_cast<int>(t));
    std::vector<Layout> out;
    for (int b0 : request_.micro_batches) {
      for (const std::vector<std::vector<int>>& groups : type_groupings(types)) {
        std::vector<std::vector<GroupOption>> options;
        for (const std::vector<int>& g : groups) {
          options.push_back(group_options(g, b0, groups.size() > 2 ? 2 : 3, max_width));
          if (options.back().empty()) break;
        }
        if (options.size() < groups.size() || options.back().empty()) continue;
        // Every combination of the groups' options.
        std::vector<size_t> pick(groups.size(), 0);
        for (bool more = true; more;) {
          Layout layout{"", b0, idle_, {}, {}, 0};
          layout.label = strprintf("hpp b0=%d%s%s", b0, order_ == StageOrder::slowest_first ? " slowest-first" : "",
                                   idle_.empty() ? "" : strprintf(" %zu idle", idle_.size()).c_str());
          for (size_t g = 0; g < groups.size(); g++) {
            const GroupOption& chosen = options[g][pick[g]];
            layout.shapes.insert(layout.shapes.end(), chosen.shapes.begin(), chosen.shapes.end());
            layout.label += strprintf(" {%s}x%zu", group_name(groups[g]).c_str(), chosen.shapes.size());
            if (chosen.width > 1) layout.label += strprintf(" width %d", chosen.width);
          }
          if (auto samples = balance_samples(layout.shapes, request_.global_batch, b0, &layout.model_ms)) {
            layout.samples = std::move(*samples);
            out.push_back(std::move(layout));
          }
          more = false;
          for (size_t g = 0; g < groups.size() && !more; g++) {
            if (++pick[g] < options[g].size()) more = true;
            else pick[g] = 0;
          }
        }
      }
    }
    std::stable_sort(out.begin(), out.end(), [](const Layout& a, const Layout& b) { return a.model_ms < b.model_ms; });
    return out;
  }

  // The layer-balanced baseline's layouts: P identical pipeline shapes, equal samples.
  std::vector<Layout> replicated_layouts() {
    std::vector<int> types;
    int g = 0;
    for (size_t t = 0; t < by_type_.size(); t++)
      if (!by_type_[t].empty()) {
        types.push_back(static_cast<int>(t));
        g = std::gcd(g, static_cast<int>(by_type_[t].size()));
      }
    std::vector<Layout> out;
    for (int b0 : request_.micro_batches)
      for (int P = 1; P <= g; P++) {
        if (g % P || P > request_.global_batch) continue;
        std::optional<std::vector<Shape>> shapes = deal(types, P, b0, 1);
        if (!shapes) continue;
        out.push_back({strprintf("layer-balanced P=%d b0=%d", P, b0), b0, idle_, std::move(*shapes),
                       equal_samples(P, request_.global_batch), 0});
      }
    return out;
  }

  std::string group_name(const std::vector<int>& group) const {
    std::string s;
    for (int t : group) s += (s.empty() ? "" : "+") + cost_.topology().device_types[t].name;
    return s;
  }

  // Ways to split the device types into mixing groups: all set partitions up to 5 types,
  // else "all together" and "each alone".
  static std::vector<std::vector<std::vector<int>>> type_groupings(const std::vector<int>& types) {
    std::vector<std::vector<std::vector<int>>> out;
    if (types.size() > 5) {
      out.push_back({types});
      std::vector<std::vector<int>> alone;
      for (int t : types) alone.push_back({t});
      out.push_back(alone);
      return out;
    }
    std::vector<std::vector<int>> current;
    std::function<void(size_t)> place = [&](size_t i) {
      if (i == types.size()) {
        out.push_back(current);
        return;
      }
      for (size_t g = 0; g < current.size(); g++) {
        current[g].push_back(types[i]);
        place(i + 1);
        current[g].pop_back();
      }
      current.push_back({types[i]});
      place(i + 1);
      current.pop_back();
    };
    place(0);
    return out;
  }

 private:
  const CostModel& cost_;
  const PlanRequest& request_;
  std::vector<int> idle_;
  StageOrder order_;
  int active_ = 0;                          // ranks not idle
  std::vector<double> speed_;               // per device type: layers per ms
  std::vector<std::vector<int>> by_type_;   // active ranks of each device type
  PartitionMemo& memo_;
};

// Why nothing fits: the batch, or memory.
[[noreturn]] void fail_no_plan(const CostModel& cost, const PlanRequest& request, const std::string& where) {
  const int world = cost.topology().world_size(), L = cost.model().num_layers;
  const int min_pipelines = (world + L - 1) / L;
  if (request.global_batch < min_pipelines)
    fail_input(where, "global_batch",
               strprintf("at least %d samples: each of the %d devices takes at least one sample of its pipeline's "
                         "micro-batches, and a pipeline of n samples has at most %d stages (one per layer) of at most "
                         "n ranks each", min_pipelines, world, L),
               std::to_string(request.global_batch));
  // The plan that needs least: every device (the largest first, as far as there are layers) in
  // one pipeline of 1-sample micro-batches, each stage as little as recomputation makes it, the
  // layers cut so that the largest excess over a device is smallest (dynamic programming).
  const Topology& topo = cost.topology();
  std::vector<int> ranks(static_cast<size_t>(world));
  std::iota(ranks.begin(), ranks.end(), 0);
  std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) { return topo.device_of(a).memory_gb > topo.device_of(b).memory_gb; });
  const int S = std::min(world, L);
  auto excess = [&](int s, LayerRange layers) {  // bytes over stage s's device at its least
    double least = std::numeric_limits<double>::infinity();
    for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full})
      if (mode == Recompute::none || cost.allow_recompute())
        least = std::min(least, cost.memory_bytes(layers, 1, S - s, mode));
    return least - cost.device_bytes(topo.ranks[ranks[s]].device_type);
  };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(S + 1, std::vector<double>(L + 1, kInf));
  std::vector<std::vector<int>> from(S + 1, std::vector<int>(L + 1, -1));
  best[0][0] = -kInf;
  for (int s = 0; s < S; s++)
    for (int j = s + 1; j <= L - (S - s - 1); j++)
      for (int i = s; i < j; i++)
        if (best[s][i] < kInf && std::max(best[s][i], excess(s, {i, j})) < best[s + 1][j])
          best[s + 1][j] = std::max(best[s][i], excess(s, {i, j})), from[s + 1][j] = i;
  int worst_stage = 0;
  LayerRange worst_layers{};
  double worst = -kInf;
  for (int s = S, j = L; s > 0; j = from[s][j], s--) {
    const LayerRange layers{from[s][j], j};
    if (excess(s - 1, layers) > worst) worst = excess(s - 1, layers), worst_stage = s - 1, worst_layers = layers;
  }
  const int rank = ranks[worst_stage];
  const DeviceType& device = topo.device_of(rank);
  fail_input(topo.source, strprintf("device_types (rank %d, %s)", rank, device.name.c_str()),
             strprintf("devices that can hold model '%s' at seq_len %d", cost.model().name.c_str(), cost.seq_len()),
             strprintf("rank %d would need %.2f GB, %.2f GB more than its %g GB, even in the plan that needs least of those eth_plan tries "
                       "(%d of the %d devices, the largest, in one pipeline, micro-batches of 1 sample, %s; "
                       "this rank holding layers [%d, %d) as stage %d of %d)",
                       rank, device.memory_gb + worst * 1e-9, worst * 1e-9, device.memory_gb, S, world,
                       cost.allow_recompute() ? "each stage recomputing as much as it needs" : "no recomputation",
                       worst_layers.begin, worst_layers.end, worst_stage, S));
}

// A funnel: plans of the first `estimate_first` layouts (by the linear model) that make one (a
// pipeline whose sample count has no micro-batch at least as wide as its widest stage makes
// none), ranked by the analytic model, which adds the exposed block reductions and the optimizer;
// the best `simulate_first` of those simulated, fastest first.
std::vector<Candidate> finish(const CostModel& cost, const PlanRequest& request, std::vector<Layout> layouts,
                              size_t simulate_first, size_t estimate_first) {
  std::vector<std::pair<double, size_t>> ranked;  // analytic ms, index into plans
  std::vector<std::pair<Plan, std::string>> plans;
  for (size_t i = 0; i < layouts.size() && plans.size() < estimate_first; i++) {
    std::optional<Plan> plan = make_plan(cost, layouts[i], request.global_batch);
    if (!plan) continue;
    ranked.push_back({cost.estimate(*plan).iteration_ms, plans.size()});
    plans.push_back({std::move(*plan), layouts[i].label});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Candidate> out;
  for (size_t k = 0; k < ranked.size() && k < simulate_first; k++) {
    auto& [plan, label] = plans[ranked[k].second];
    Candidate c = evaluate_plan(cost, std::move(plan), label);
    if (std::none_of(out.begin(), out.end(), [&](const Candidate& o) { return same_plan(o.plan, c.plan); }))
      out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return a.simulation.iteration_ms < b.simulation.iteration_ms;
  });
  return out;
}

// Layouts the analytic model ranks before the best few are simulated.
constexpr size_t kEstimateFirst = 40;
// Refinement moves, divided by the device count (at most 3000; a large cluster gets few: its
// simulations are slow, and the audit found no move that helps a plan of many wide stages).
constexpr int kRefineMoves = 24000;
// Device-group plans are searched only where the analytic model puts them within this factor of
// the best candidate's simulated time: the pruning is what keeps that search fast on large
// clusters. Not of the best analytic time: on HPP's layouts of many pipelines the analytic model
// can be far below the simulator (it does not queue the reductions that share a node's NIC), and
// at bf16 prices, where compute no longer hides them, by up to 3x (1024gpu-4types: 2699 ms
// analytic, 7753 simulated), which pruned every device-group plan that wins there.
constexpr double kDeviceGroupSlack = 1.1;
// ... and replica counts from the most down, the next searched only while the shapes of those
// searched so far (stage orders of group sizes, in every order of the device types) number at
// most this many: the shapes grow combinatorially with the devices of a pipeline and with the
// types, 6 to 14 times with each halving of the replica count on the shipped scenarios (a
// 1024-device pipeline alone takes ~30 s). On 1024gpu-4types this reaches pipelines of 128 devices (0.6M shapes up to
// 64, 8.0M with 128, ~3 s; 256 would bring 51.7M), on 256gpu-3types 128 devices (0.15M up to 64,
// 1.5M with 128), and every replica count on the smaller scenarios; the device-group plans that
// win at bf16 prices have 128 devices.
constexpr long kDeviceGroupShapes = 1'000'000;

// Sets of ranks worth leaving idle: none; each device type (when there are several), and all but
// the fastest type; each node's ranks on small clusters. On a small batch the gradient sums a
// slow or remote device adds can cost more than its compute saves.
std::vector<std::vector<int>> idle_options(const CostModel& cost) {
  const Topology& topo = cost.topology();
  std::vector<std::vector<int>> out = {{}};
  std::vector<std::vector<int>> of_type(topo.device_types.size());
  for (int r = 0; r < topo.world_size(); r++) of_type[topo.ranks[r].device_type].push_back(r);
  std::erase_if(of_type, [](const std::vector<int>& ranks) { return ranks.empty(); });
  if (of_type.size() > 1) {
    for (const std::vector<int>& ranks : of_type) out.push_back(ranks);
    if (of_type.size() > 2) {  // keep only the fastest type
      auto layer_ms = [&](const std::vector<int>& ranks) {
        const ProfileEntry e = cost.profile(topo.ranks[ranks[0]].device_type).at(1);
        return e.layer.forward_ms + e.layer.backward_ms;
      };
      const auto fastest = std::min_element(of_type.begin(), of_type.end(),
                                            [&](const auto& a, const auto& b) { return layer_ms(a) < layer_ms(b); });
      std::vector<int> others;
      for (const std::vector<int>& ranks : of_type)
        if (&ranks != &*fastest) others.insert(others.end(), ranks.begin(), ranks.end());
      std::sort(others.begin(), others.end());
      out.push_back(others);
    }
  }
  constexpr int kSmallCluster = 16;
  if (topo.nodes.size() > 1 && topo.world_size() <= kSmallCluster)
    for (const Node& node : topo.nodes) {
      std::vector<int> ranks(node.devices.size());
      std::iota(ranks.begin(), ranks.end(), node.first_rank);
      out.push_back(ranks);
    }
  return out;
}

// Adds the candidates of `more` that `pool` lacks.
void add_new(std::vector<Candidate>& pool, std::vector<Candidate> more) {
  for (Candidate& c : more)
    if (std::none_of(pool.begin(), pool.end(), [&](const Candidate& o) { return same_plan(o.plan, c.plan); }))
      pool.push_back(std::move(c));
}

// Sorts `pool` fastest first, then refines: the structured candidates share their shape rules
// (one width per type run, one micro-batch cap, stage orders by type); a short local search
// from the best few (local_search.hpp) changes one device, cut, split or share at a time,
// scored by the simulator, inside the request. Its budget shrinks with the cluster, whose
// simulations grow with it. A better plan it finds goes first.
void sort_and_refine(const CostModel& cost, const PlanRequest& request, std::vector<Candidate>& pool,
                     const std::string& where) {
  std::stable_sort(pool.begin(), pool.end(), [](const Candidate& a, const Candidate& b) {
    return a.simulation.iteration_ms < b.simulation.iteration_ms;
  });
  LocalSearchOptions refine;
  refine.iterations = std::min(kRefineMoves / cost.topology().world_size(), 3000);
  refine.random_starts = 0;
  const std::vector<Candidate> starts(pool.begin(), pool.begin() + long(std::min<size_t>(pool.size(), 3)));
  Candidate refined = local_search(cost, request, starts, refine, where).best;
  if (refined.simulation.iteration_ms < pool.front().simulation.iteration_ms) {
    refined.label = pool.front().label + ", refined";
    refined.plan.source = "eth_plan (" + refined.label + ")";
    pool.insert(pool.begin(), std::move(refined));
  }
}

// search_hpp for one cost model: its recomputation allowed or not.
std::vector<Candidate> search_pools(const CostModel& cost, const PlanRequest& request, const std::string& where) {
  const size_t simulate_first = std::max<size_t>(6, static_cast<size_t>(request.top));
  // Two pools: every candidate, and those of one rank per stage alone, which is searched on its
  // own (the pruning keeps only the best few by the linear model, and wide stages crowd them
  // out) and refined on its own, so that allowing wide stages never gives a slower plan than
  // forbidding them: the narrow pool and its refinement are exactly those of max_stage_width 1.
  std::vector<Candidate> out, narrow;
  PartitionMemo memo;
  for (const std::vector<int>& idle : idle_options(cost)) {
    for (StageOrder order : {StageOrder::memory_first, StageOrder::slowest_first}) {
      Searcher searcher(cost, request, memo, idle, order);
      if (request.max_stage_width != 1) add_new(out, finish(cost, request, searcher.layouts(request.max_stage_width), simulate_first, kEstimateFirst));
      add_new(narrow, finish(cost, request, searcher.layouts(1), simulate_first, kEstimateFirst));
    }
  }
  // The replicated shape is in HPP's space too (with balanced samples, or the baseline's own).
  add_new(narrow, finish(cost, request, Searcher(cost, request, memo).replicated_layouts(), 1 << 20, 1 << 20));
  if (out.empty() && narrow.empty()) fail_no_plan(cost, request, where);
  if (!narrow.empty()) {
    PlanRequest one_rank_per_stage = request;
    one_rank_per_stage.max_stage_width = 1;
    sort_and_refine(cost, one_rank_per_stage, narrow, where);
  }
  if (request.max_stage_width != 1) {
    // Stages mixing device types: the device-group search (baseline_metis.cpp), pruned by the
    // simulated time of the best candidate so far, with slack for where the analytic model, by
    // which it ranks its plans, disagrees with the simulator.
    double best_ms = std::numeric_limits<double>::infinity();
    for (const std::vector<Candidate>* pool : {&out, &narrow})
      for (const Candidate& c : *pool) best_ms = std::min(best_ms, c.simulation.iteration_ms);
    add_new(out, device_group_plans(cost, request, kDeviceGroupSlack * best_ms, kDeviceGroupShapes));
    if (!out.empty()) sort_and_refine(cost, request, out, where);
    add_new(out, std::move(narrow));
  } else {
    out = std::move(narrow);
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return a.simulation.iteration_ms < b.simulation.iteration_ms;
  });
  return out;
}

}  // namespace

std::vector<Candidate> search_hpp(const CostModel& cost, const PlanRequest& request, const std::string& where) {
  // Recomputation only where no plan fits without it. Searched together with the plans that
  // keep every activation, the layouts that fit only by recomputing (many on tight clusters,
  // their linear model optimistic) crowd the funnels: 1024gpu-4types fell from 3957 to 4537 ms
  // simulated. Searched apart, as a second pass, they doubled to tripled the planning time
  // wherever memory binds anywhere, for 0.2% on one shipped scenario (docs/results.md).
  std::vector<Candidate> out =
      recompute_only_where_needed(cost, [&](const CostModel& c) { return search_pools(c, request, where); });
  if (static_cast<int>(out.size()) > request.top) out.resize(static_cast<size_t>(request.top));
  // Sharding last: it changes no layout, only each block's collectives, AdamW and memory.
  for (Candidate& c : out) c = choose_sharding(cost, std::move(c));
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return a.simulation.iteration_ms < b.simulation.iteration_ms;
  });
  return out;
}

Candidate baseline_layer_balanced(const CostModel& cost, const PlanRequest& request, const std::string& where) {
  return recompute_only_where_needed(cost, [&](const CostModel& c) {
    PartitionMemo memo;
    Searcher searcher(c, request, memo);
    std::vector<Candidate> out = finish(c, request, searcher.replicated_layouts(), 1 << 20, 1 << 20);
    if (out.empty()) fail_no_plan(c, request, where);
    return std::move(out.front());
  });
}

Candidate baseline_uniform(const CostModel& cost, const PlanRequest& request, const std::string& where) {
  return recompute_only_where_needed(cost, [&](const CostModel& c) {
    const int N = c.topology().world_size(), L = c.model().num_layers;
    std::vector<Layout> layouts;
    for (int b0 : request.micro_batches)
      for (int d = 1; d <= std::min(N, L); d++) {
        const int P = N / d;
        if (N % d || P > request.global_batch) continue;
        Layout layout{strprintf("uniform depth=%d b0=%d", d, b0), b0, {}, {}, equal_samples(P, request.global_batch), 0};
        bool fits = true;
        for (int k = 0; k < P && fits; k++) {
          StageRanks stages;
          for (int s = 0; s < d; s++) stages.push_back({k * d + s});
          Shape shape{stages, uniform_partition(c, stages, b0)};
          for (int s = 0; s < d && fits; s++) fits = StageCost(c, stages, s, b0).fits(shape.part.layers[s]);
          layout.shapes.push_back(std::move(shape));
        }
        if (fits) layouts.push_back(std::move(layout));
      }
    std::vector<Candidate> out = finish(c, request, std::move(layouts), 1 << 20, 1 << 20);
    if (out.empty()) fail_no_plan(c, request, where);
    return std::move(out.front());
  });
}

}  // namespace eth::planner

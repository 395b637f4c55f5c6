#include "lib/planner/search.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <optional>

#include "lib/input_error.hpp"
#include "lib/planner/partition.hpp"
#include "lib/strprintf.hpp"

namespace eth::planner {
namespace {

// A pipeline before samples are assigned: its ranks in stage order and layer partition at b0.
struct Shape {
  std::vector<int> ranks;
  Partition part;
};

// A set of pipelines with their samples.
struct Layout {
  std::string label;
  int b0 = 1;
  std::vector<Shape> shapes;
  std::vector<int> samples;
  double model_ms = 0;  // linear model: (chunks - 1) * max stage + sum of stages
};

double shape_ms(const Shape& s, int chunks) { return (chunks - 1) * s.part.max_stage_ms + s.part.sum_stage_ms; }

// Water-filling: samples per pipeline, in whole micro-batches of b0 where possible, so that all
// pipelines finish together under the linear model. Nothing when there are fewer micro-batches
// than pipelines.
std::optional<std::vector<int>> balance_samples(const std::vector<Shape>& shapes, int global_batch, int b0, double* ms) {
  const int P = static_cast<int>(shapes.size());
  const int chunks = global_batch / b0, rest = global_batch % b0;
  if (chunks < P) return std::nullopt;
  auto count = [&](const Shape& s, double T) {
    return T < s.part.sum_stage_ms ? 1 : std::max(1, int(std::floor((T - s.part.sum_stage_ms) / s.part.max_stage_ms)) + 1);
  };
  double lo = 0, hi = 0;
  for (const Shape& s : shapes) hi = std::max(hi, shape_ms(s, chunks));
  for (int it = 0; it < 100 && hi - lo > 1e-9 * hi; it++) {
    const double mid = (lo + hi) / 2;
    long long total = 0;
    for (const Shape& s : shapes) total += count(s, mid);
    (total >= chunks ? hi : lo) = mid;
  }
  std::vector<int> c(P);
  long long total = 0;
  for (int k = 0; k < P; k++) total += c[k] = std::min(chunks, count(shapes[k], hi));
  for (; total < chunks; total++) {  // rounding in count() can leave chunks over: give each where it costs least
    int best = 0;
    for (int k = 1; k < P; k++)
      if (shape_ms(shapes[k], c[k] + 1) < shape_ms(shapes[best], c[best] + 1)) best = k;
    c[best]++;
  }
  for (; total > chunks; total--) {  // drop the excess from the slowest pipelines
    int worst = -1;
    for (int k = 0; k < P; k++)
      if (c[k] > 1 && (worst < 0 || shape_ms(shapes[k], c[k]) > shape_ms(shapes[worst], c[worst]))) worst = k;
    c[worst]--;
  }
  int take_rest = 0;  // the remainder (< b0 samples) goes where it costs least
  for (int k = 1; k < P; k++)
    if (shape_ms(shapes[k], c[k] + 1) < shape_ms(shapes[take_rest], c[take_rest] + 1)) take_rest = k;
  std::vector<int> samples(P);
  *ms = 0;
  for (int k = 0; k < P; k++) {
    samples[k] = c[k] * b0 + (k == take_rest ? rest : 0);
    *ms = std::max(*ms, shape_ms(shapes[k], c[k] + (k == take_rest && rest > 0 ? 1 : 0)));
  }
  return samples;
}

std::vector<int> equal_samples(int P, int global_batch) {
  std::vector<int> n(P);
  for (int k = 0; k < P; k++) n[k] = global_batch / P + (k < global_batch % P ? 1 : 0);
  return n;
}

// The micro-batch (a divisor of n, at most b0) that makes the pipeline fastest.
PlanPipeline make_pipeline(const CostModel& cost, const Shape& shape, int n, int b0) {
  PlanPipeline best;
  double best_ms = 0;
  for (int b = std::min(b0, n); b >= 1; b--) {
    if (n % b) continue;
    const int m = n / b;
    double worst = 0, sum = 0;
    for (size_t s = 0; s < shape.ranks.size(); s++) {
      const double ms = stage_ms(cost, shape.ranks, static_cast<int>(s), shape.part.layers[s], b);
      worst = std::max(worst, ms);
      sum += ms;
    }
    const double total = (m - 1) * worst + sum;
    if (best.stages.empty() || total < best_ms) {
      best_ms = total;
      best.micro_batch = b;
      best.micro_batches = m;
      best.stages.clear();
      for (size_t s = 0; s < shape.ranks.size(); s++) best.stages.push_back({{shape.ranks[s]}, shape.part.layers[s], {}});
    }
  }
  return best;
}

Plan make_plan(const CostModel& cost, const Layout& layout, int global_batch) {
  Plan plan;
  plan.source = "eth_plan (" + layout.label + ")";
  plan.global_batch = global_batch;
  for (size_t k = 0; k < layout.shapes.size(); k++)
    plan.pipelines.push_back(make_pipeline(cost, layout.shapes[k], layout.samples[k], layout.b0));
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

class Searcher {
 public:
  Searcher(const CostModel& cost, const PlanRequest& request) : cost_(cost), request_(request) {
    const Topology& topo = cost.topology();
    by_type_.resize(topo.device_types.size());
    for (int r = 0; r < topo.world_size(); r++) by_type_[topo.ranks[r].device_type].push_back(r);
  }

  // Pipelines of `group`'s device types, each type's ranks dealt in P contiguous chunks;
  // stages ordered by device memory (largest first), then rank. Nothing if any does not fit.
  std::optional<std::vector<Shape>> deal(const std::vector<int>& group, int P, int b0) {
    std::vector<std::vector<int>> pipes(P);
    for (int t : group) {
      const std::vector<int>& ranks = by_type_[t];
      const size_t n = ranks.size();
      for (int k = 0; k < P; k++)
        pipes[k].insert(pipes[k].end(), ranks.begin() + long(k * n / P), ranks.begin() + long((k + 1) * n / P));
    }
    const Topology& topo = cost_.topology();
    std::vector<Shape> shapes;
    for (std::vector<int>& ranks : pipes) {
      if (ranks.empty() || static_cast<int>(ranks.size()) > cost_.model().num_layers) return std::nullopt;
      std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
        const DeviceType &x = topo.device_of(a), &y = topo.device_of(b);
        return x.memory_gb != y.memory_gb ? x.memory_gb > y.memory_gb : topo.ranks[a].device_type < topo.ranks[b].device_type;
      });
      const std::optional<Partition> part = partition(ranks, b0);
      if (!part) return std::nullopt;
      shapes.push_back({ranks, *part});
    }
    return shapes;
  }

  // Memoised on the device types and links along the pipeline: identical pipelines share it.
  std::optional<Partition> partition(const std::vector<int>& ranks, int b0) {
    const Topology& topo = cost_.topology();
    std::string key = std::to_string(b0);
    for (size_t s = 0; s < ranks.size(); s++) {
      key += strprintf("|%d", topo.ranks[ranks[s]].device_type);
      if (s + 1 < ranks.size()) {
        const int a = topo.ranks[ranks[s]].node, b = topo.ranks[ranks[s + 1]].node;
        const Link& l = a == b ? topo.nodes[a].link : topo.network;
        key += strprintf(",%g,%g", l.bandwidth_gbs, l.latency_us);
      }
    }
    auto it = memo_.find(key);
    if (it == memo_.end()) it = memo_.emplace(key, partition_layers(cost_, ranks, b0)).first;
    return it->second;
  }

  // The best few pipeline counts of one group, by the time to run its share of the batch.
  std::vector<std::vector<Shape>> group_options(const std::vector<int>& group, int b0, int keep) {
    int n = 0;
    for (int t : group) n += static_cast<int>(by_type_[t].size());
    const int share = std::max(1, int(double(request_.global_batch) * n / cost_.topology().world_size()));
    std::vector<std::pair<double, std::vector<Shape>>> found;
    double best = 0;
    int since_better = 0;
    for (int P = n; P >= 1 && since_better < 8; P--) {  // shallowest pipelines first
      std::optional<std::vector<Shape>> shapes = deal(group, P, b0);
      if (!shapes) continue;
      double ms = 0;
      if (!balance_samples(*shapes, std::max(share, P * b0), b0, &ms)) continue;
      if (found.empty() || ms < best) {
        best = ms;
        since_better = 0;
      } else {
        since_better++;
      }
      found.emplace_back(ms, std::move(*shapes));
    }
    std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::vector<Shape>> out;
    for (size_t i = 0; i < found.size() && static_cast<int>(i) < keep; i++) out.push_back(std::move(found[i].second));
    return out;
  }

  std::vector<Layout> layouts() {
    std::vector<int> types;
    for (size_t t = 0; t < by_type_.size(); t++)
      if (!by_type_[t].empty()) types.push_back(static_cast<int>(t));
    std::vector<Layout> out;
    for (int b0 : request_.micro_batches) {
      for (const std::vector<std::vector<int>>& groups : type_groupings(types)) {
        std::vector<std::vector<std::vector<Shape>>> options;
        for (const std::vector<int>& g : groups) {
          options.push_back(group_options(g, b0, groups.size() > 2 ? 2 : 3));
          if (options.back().empty()) break;
        }
        if (options.size() < groups.size() || options.back().empty()) continue;
        // Every combination of the groups' options.
        std::vector<size_t> pick(groups.size(), 0);
        for (bool more = true; more;) {
          Layout layout;
          layout.b0 = b0;
          layout.label = strprintf("hpp b0=%d", b0);
          for (size_t g = 0; g < groups.size(); g++) {
            const std::vector<Shape>& chosen = options[g][pick[g]];
            layout.shapes.insert(layout.shapes.end(), chosen.begin(), chosen.end());
            layout.label += strprintf(" {%s}x%zu", group_name(groups[g]).c_str(), chosen.size());
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
        std::optional<std::vector<Shape>> shapes = deal(types, P, b0);
        if (!shapes) continue;
        out.push_back({strprintf("layer-balanced P=%d b0=%d", P, b0), b0, std::move(*shapes), equal_samples(P, request_.global_batch), 0});
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
  std::vector<std::vector<int>> by_type_;
  std::map<std::string, std::optional<Partition>> memo_;
};

// Why nothing fits: the batch, or memory.
[[noreturn]] void fail_no_plan(const CostModel& cost, const PlanRequest& request, const std::string& where) {
  const int world = cost.topology().world_size(), L = cost.model().num_layers;
  const int min_pipelines = (world + L - 1) / L;
  if (request.global_batch < min_pipelines)
    fail_input(where, "global_batch",
               strprintf("at least %d samples: %d devices need at least %d pipelines of at most %d stages (one per layer), "
                         "and every pipeline at least one sample", min_pipelines, world, min_pipelines, L),
               std::to_string(request.global_batch));
  double largest = 0;
  std::string name;
  for (const DeviceType& t : cost.topology().device_types)
    if (t.memory_gb > largest) largest = t.memory_gb, name = t.name;
  const double one_layer = cost.memory_bytes({1, 2}, 1, 1) * 1e-9;
  fail_input(cost.topology().source, "device_types",
             strprintf("devices that can hold model '%s' (one middle layer at micro-batch 1 needs %.2f GB; "
                       "the largest device, %s, has %g GB)", cost.model().name.c_str(), one_layer, name.c_str(), largest),
             "no grouping of the devices into pipelines whose every stage fits memory");
}

std::vector<Candidate> finish(const CostModel& cost, const PlanRequest& request, std::vector<Layout> layouts,
                              size_t simulate_first) {
  std::vector<Candidate> out;
  for (size_t i = 0; i < layouts.size() && i < simulate_first; i++) {
    Candidate c = evaluate_plan(cost, make_plan(cost, layouts[i], request.global_batch), layouts[i].label);
    if (std::none_of(out.begin(), out.end(), [&](const Candidate& o) { return same_plan(o.plan, c.plan); }))
      out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return a.simulation.iteration_ms < b.simulation.iteration_ms;
  });
  return out;
}

}  // namespace

std::vector<int> split_by_speed(int b, const std::vector<double>& speeds) {
  const int n = static_cast<int>(speeds.size());
  const double total = std::accumulate(speeds.begin(), speeds.end(), 0.0);
  std::vector<int> split(n, 1);
  std::vector<double> remainder(n, 0);
  int left = b - n;
  const int base_left = left;
  for (int i = 0; i < n; i++) {
    const double want = base_left * speeds[i] / total;
    split[i] += static_cast<int>(want);
    left -= static_cast<int>(want);
    remainder[i] = want - static_cast<int>(want);
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int c) { return remainder[a] > remainder[c]; });
  for (int i = 0; left > 0; i = (i + 1) % n, left--) split[order[i]]++;
  return split;
}

Candidate evaluate_plan(const CostModel& cost, Plan plan, const std::string& label) {
  Candidate c;
  c.label = label;
  c.estimate = cost.estimate(plan);
  c.simulation = simulate(cost, plan);
  plan.predicted = {c.simulation.iteration_ms, c.simulation.pipeline_ms, c.estimate.memory_gb};
  c.plan = std::move(plan);
  return c;
}

std::vector<Candidate> search_hpp(const CostModel& cost, const PlanRequest& request, const std::string& where) {
  Searcher searcher(cost, request);
  std::vector<Layout> layouts = searcher.layouts();
  const size_t simulate_first = std::max<size_t>(6, static_cast<size_t>(request.top));
  std::vector<Candidate> out = finish(cost, request, std::move(layouts), simulate_first);
  // The replicated shape is in HPP's space too (with balanced samples, or the baseline's own).
  for (Candidate& c : finish(cost, request, searcher.replicated_layouts(), 1 << 20))
    if (std::none_of(out.begin(), out.end(), [&](const Candidate& o) { return same_plan(o.plan, c.plan); }))
      out.push_back(std::move(c));
  if (out.empty()) fail_no_plan(cost, request, where);
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return a.simulation.iteration_ms < b.simulation.iteration_ms;
  });
  if (static_cast<int>(out.size()) > request.top) out.resize(static_cast<size_t>(request.top));
  return out;
}

Candidate baseline_layer_balanced(const CostModel& cost, const PlanRequest& request, const std::string& where) {
  Searcher searcher(cost, request);
  std::vector<Candidate> out = finish(cost, request, searcher.replicated_layouts(), 1 << 20);
  if (out.empty()) fail_no_plan(cost, request, where);
  return std::move(out.front());
}

Candidate baseline_uniform(const CostModel& cost, const PlanRequest& request, const std::string& where) {
  const int N = cost.topology().world_size(), L = cost.model().num_layers;
  std::vector<Layout> layouts;
  for (int b0 : request.micro_batches)
    for (int d = 1; d <= std::min(N, L); d++) {
      const int P = N / d;
      if (N % d || P > request.global_batch) continue;
      Layout layout{strprintf("uniform depth=%d b0=%d", d, b0), b0, {}, equal_samples(P, request.global_batch), 0};
      bool fits = true;
      for (int k = 0; k < P && fits; k++) {
        std::vector<int> ranks(d);
        std::iota(ranks.begin(), ranks.end(), k * d);
        Shape shape{ranks, uniform_partition(cost, ranks, b0)};
        for (int s = 0; s < d && fits; s++) fits = stage_fits(cost, ranks, s, shape.part.layers[s], b0);
        layout.shapes.push_back(std::move(shape));
      }
      if (fits) layouts.push_back(std::move(layout));
    }
  std::vector<Candidate> out = finish(cost, request, std::move(layouts), 1 << 20);
  if (out.empty()) fail_no_plan(cost, request, where);
  return std::move(out.front());
}

}  // namespace eth::planner

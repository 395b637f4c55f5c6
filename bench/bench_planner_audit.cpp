// Planner audit: on random small clusters (lib/planner/exhaustive.hpp, random_audit_case), the
// HPP search's plan against the exhaustive optimum under the same simulator. One line per case:
// devices, the two simulated iteration times, the gap, the wall time of each, the size of the
// space; the plans of every case more than 1% off; a summary; JSON (default
// bench/results/planner_audit.json). Never asserts (tests/unit/test_planner_audit.cpp does).
#include <boost/program_options.hpp>

#include <chrono>
#include <iostream>

#include <nlohmann/json.hpp>

#include "bench/bench_stamp.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/planner/exhaustive.hpp"
#include "lib/planner/micro_batches.hpp"
#include "lib/planner/search.hpp"


using namespace eth::planner;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const double load_at_start = eth::bench::load_now();
  int cases = 30, max_devices = 6, max_layers = 8;
  uint64_t seed = 1;
  std::string out = "bench/results/planner_audit.json", catalog_path = "inputs/topologies/gpu-catalog.yaml";
  bool no_prune = false;
  namespace po = boost::program_options;
  po::options_description desc("bench_planner_audit options");
  desc.add_options()("cases", po::value(&cases)->default_value(cases), "random clusters")(
      "seed", po::value(&seed)->default_value(seed), "case k uses seed + k")(
      "max-devices", po::value(&max_devices)->default_value(max_devices), "devices per cluster at most (2..6)")(
      "max-layers", po::value(&max_layers)->default_value(max_layers), "layers at most (2..8)")(
      "no-prune", po::bool_switch(&no_prune), "simulate every plan of the space (slow)")(
      "catalog", po::value(&catalog_path)->default_value(catalog_path), "device types to draw from")(
      "out", po::value(&out)->default_value(out), "JSON output");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  po::notify(vm);

  const std::vector<eth::DeviceType> catalog = eth::load_topology(catalog_path).device_types;
  AuditShape shape;
  shape.max_devices = max_devices;
  shape.max_layers = max_layers;
  ExhaustiveLimits limits;
  limits.prune = !no_prune;

  nlohmann::json results = nlohmann::json::array();
  int compared = 0, within = 0;
  double max_gap = 0, sum_gap = 0, total_exhaustive_ms = 0;
  std::cout << eth::strprintf("%-4s %-52s %10s %10s %7s %9s %10s %12s %10s\n", "case", "cluster", "hpp_ms", "exh_ms",
                              "gap_%", "plan_ms", "exh_wall", "plans", "simulated");
  for (int k = 0; k < cases; k++) {
    const AuditCase c = random_audit_case(seed + static_cast<uint64_t>(k), catalog, shape);
    CostModel cost(c.topology, c.model, c.seq_len, profiles_for(c.topology, c.model, c.seq_len, {}, kDefaultMicroBatches, figures_paths(c.topology)));
    cost.set_allow_sharding(false);  // the enumeration's space: every plan keeps whole moments
    nlohmann::json r = {{"case", k}, {"seed", seed + k}, {"cluster", c.name}, {"devices", c.topology.world_size()},
                        {"layers", c.model.num_layers}, {"channels", c.model.channels},
                        {"global_batch", c.request.global_batch}};
    auto t0 = std::chrono::steady_clock::now();
    std::optional<Candidate> hpp;
    try {
      hpp = search_hpp(cost, c.request, c.name).front();
    } catch (const eth::InputError& e) {
      r["hpp_error"] = e.what();
    }
    const double plan_ms = ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    const ExhaustiveResult ex = exhaustive_best(cost, c.request, limits);
    const double exhaustive_ms = ms_since(t0);
    total_exhaustive_ms += exhaustive_ms;
    r["planning_ms"] = plan_ms;
    r["exhaustive_wall_ms"] = exhaustive_ms;
    r["plans_in_space"] = ex.stats.plans;
    r["plans_simulated"] = ex.stats.plans_simulated;
    r["pipelines_replayed"] = ex.stats.pipelines;
    std::string gap_text = "-";
    if (hpp) {
      r["hpp_ms"] = hpp->simulation.iteration_ms;
      r["hpp_plan"] = plan_outline(hpp->plan, c.topology);
      r["hpp_label"] = hpp->label;
    }
    if (ex.best) {
      r["exhaustive_ms"] = ex.best->simulation.iteration_ms;
      r["exhaustive_plan"] = plan_outline(ex.best->plan, c.topology);
    }
    if (hpp && ex.best) {
      const double gap = 100 * (hpp->simulation.iteration_ms / ex.best->simulation.iteration_ms - 1);
      r["gap_pct"] = gap;
      gap_text = eth::strprintf("%.2f", gap);
      compared++;
      within += gap <= 1.0;
      max_gap = std::max(max_gap, gap);
      sum_gap += gap;
    }
    std::cout << eth::strprintf("%-4d %-52s %10s %10s %7s %9.1f %10.1f %12.0f %10lld\n", k, c.name.c_str(),
                                hpp ? eth::strprintf("%.1f", hpp->simulation.iteration_ms).c_str() : "none",
                                ex.best ? eth::strprintf("%.1f", ex.best->simulation.iteration_ms).c_str() : "none",
                                gap_text.c_str(), plan_ms, exhaustive_ms, ex.stats.plans, ex.stats.plans_simulated);
    // Where the planner is more than 1% off: the optimum of the space cut step by step to the
    // search's own structure, to attribute the gap (each cut can only make the optimum slower).
    if (r.contains("gap_pct") && r["gap_pct"].get<double>() > 1.0) {
      std::cout << "       hpp:        " << r["hpp_plan"].get<std::string>() << "  (" << hpp->label << ")\n";
      std::cout << "       exhaustive: " << r["exhaustive_plan"].get<std::string>() << '\n';
      ExhaustiveLimits cut = limits;
      const char* steps[] = {"no idle ranks", "+ one device type per stage", "+ stages in memory order",
                             "+ each type in rank order"};
      const char* keys[] = {"no_idle", "one_type_per_stage", "memory_order", "rank_order"};
      for (int step = 0; step < 4; step++) {
        if (step == 0) cut.allow_idle = false;
        if (step == 1) cut.one_type_per_stage = true;
        if (step == 2) cut.stages_by_memory = true;
        if (step == 3) cut.types_in_rank_order = true;
        const ExhaustiveResult restricted = exhaustive_best(cost, c.request, cut);
        if (!restricted.best) {
          std::cout << eth::strprintf("       %-28s no plan\n", steps[step]);
          r[std::string("optimum_") + keys[step] + "_ms"] = nullptr;
          continue;
        }
        const double ms = restricted.best->simulation.iteration_ms;
        const double gap = 100 * (hpp->simulation.iteration_ms / ms - 1);
        std::cout << eth::strprintf("       %-28s %10.1f ms, planner %+7.2f%%: %s\n", steps[step], ms, gap,
                                    plan_outline(restricted.best->plan, c.topology).c_str());
        r[std::string("optimum_") + keys[step] + "_ms"] = ms;
        r[std::string("optimum_") + keys[step] + "_plan"] = plan_outline(restricted.best->plan, c.topology);
      }
    }
    if (hpp.has_value() != ex.best.has_value())
      std::cout << "       MISMATCH: one found a plan, the other none\n";
    std::cout.flush();
    results.push_back(r);
  }
  const nlohmann::json summary = {{"cases", cases}, {"compared", compared}, {"within_1pct", within},
                                  {"max_gap_pct", max_gap}, {"mean_gap_pct", compared ? sum_gap / compared : 0.0},
                                  {"exhaustive_total_ms", total_exhaustive_ms}};
  std::cout << eth::strprintf("summary: %d of %d compared cases within 1%%; gap max %.2f%%, mean %.2f%%; exhaustive %.1f s\n",
                              within, compared, max_gap, compared ? sum_gap / compared : 0.0, total_exhaustive_ms / 1e3);
  eth::bench::write_stamped(out, {{"benchmark", "planner_audit"}, {"seed", seed}, {"summary", summary}, {"cases", results}},
                            load_at_start);
  std::cout << "wrote " << out << '\n';
  return 0;
}

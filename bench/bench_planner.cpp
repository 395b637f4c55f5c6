// Planner benchmark: for every scenario in inputs/scenarios, the HPP search's wall time (one
// core) and the simulated iteration time of its plan against the uniform, layer-balanced and
// Metis-style baselines, and against the best plan a randomised local search (local_search.hpp)
// finds from HPP's plan, the baselines' and random ones. Prints a table and writes JSON (default
// bench/results/planner.json), with a one-line description of the HPP, Metis and local-search
// plans. Devices are priced at --precision (eth_train's: each device type on its path,
// lib/plan/precision_paths.hpp), or by default at the rates the figures of docs/results.md were
// measured at (figures_paths: TF32 where a type has it, else fp32). Never asserts.
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "bench/bench_stamp.hpp"
#include "kernels/precision.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/planner/local_search.hpp"
#include "lib/planner/scenario.hpp"
#include "lib/planner/search.hpp"


namespace fs = std::filesystem;
using namespace eth::planner;

namespace {

// "4x [A100-80GB 0-12 | 3xT4-16GB 12-36] 8x2": identical pipelines (device types per stage,
// layers, micro-batch x count) counted once; idle ranks by type at the end.
std::string describe(const eth::Topology& topo, const eth::Plan& plan) {
  auto stage_text = [&](const eth::PlanStage& st) {
    std::map<std::string, int> count;
    std::vector<std::string> names;  // in order of first appearance
    for (int r : st.ranks) {
      const std::string& name = topo.device_of(r).name;
      if (count[name]++ == 0) names.push_back(name);
    }
    std::string out;
    for (const std::string& name : names)
      out += (out.empty() ? "" : "+") + (count[name] > 1 ? std::to_string(count[name]) + "x" : std::string()) + name;
    if (!st.split.empty()) {
      std::string split;
      for (int v : st.split) split += (split.empty() ? "" : ":") + std::to_string(v);
      if (st.split.size() <= 4) out += " (" + split + ")";
    }
    return out + eth::strprintf(" %d-%d", st.layers.begin, st.layers.end);
  };
  std::vector<std::pair<std::string, int>> kinds;
  for (const eth::PlanPipeline& pipe : plan.pipelines) {
    std::string text = "[";
    for (size_t s = 0; s < pipe.stages.size(); s++) text += (s ? " | " : "") + stage_text(pipe.stages[s]);
    text += eth::strprintf("] %dx%d", pipe.micro_batch, pipe.micro_batches);
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == text; });
    if (it == kinds.end()) kinds.push_back({text, 1});
    else it->second++;
  }
  std::string out;
  for (const auto& [text, n] : kinds) out += (out.empty() ? "" : "; ") + (n > 1 ? std::to_string(n) + "x " : std::string()) + text;
  if (!plan.idle.empty()) {
    std::map<std::string, int> idle;
    for (int r : plan.idle) idle[topo.device_of(r).name]++;
    out += "; idle:";
    for (const auto& [name, n] : idle) out += eth::strprintf(" %dx%s", n, name.c_str());
  }
  return out;
}

// CPU time of this (single) thread: the planner's time on one core even when other processes
// share the machine's cores, which the wall time then overstates.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

}  // namespace

int main(int argc, char** argv) {
  const double load_at_start = eth::bench::load_now();
  std::string dir = "inputs/scenarios", out = "bench/results/planner.json", profiles = "inputs/profiles", only;
  std::string precision = "figures";
  LocalSearchOptions ls;
  ls.iterations = 20000;
  namespace po = boost::program_options;
  po::options_description desc("bench_planner options");
  desc.add_options()("scenarios", po::value(&dir)->default_value(dir), "scenario directory")(
      "profiles", po::value(&profiles)->default_value(profiles), "profile directory")(
      "out", po::value(&out)->default_value(out), "JSON output")(
      "only", po::value(&only), "run only the scenarios whose name contains this")(
      "precision", po::value(&precision)->default_value(precision),
      "figures (TF32 where a device type has it, else fp32), or a job's --precision: auto, fp32, tf32, bf16, fp16")(
      "ls-iterations", po::value(&ls.iterations)->default_value(ls.iterations), "local search: moves per scenario, all starts together")(
      "ls-seconds", po::value<double>()->default_value(0), "local search: wall-time limit per scenario (0: none; else not deterministic)")(
      "ls-seed", po::value(&ls.seed)->default_value(ls.seed), "local search: seed");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  po::notify(vm);
  ls.time_limit_ms = vm["ls-seconds"].as<double>() * 1000;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  const std::vector<Profile> available = load_profile_dir(profiles);
  nlohmann::json results = nlohmann::json::array();
  std::cout << eth::strprintf("%-22s %5s %6s %9s %9s %9s %9s %9s %9s %9s %6s %6s %6s %6s %8s\n", "scenario", "gpus",
                              "layers", "plan_ms", "hpp_ms", "hpp_w1_ms", "unif_ms", "layerb_ms", "metis_ms", "ls_ms", "x_w1",
                              "x_unif", "x_layb", "x_metis", "hpp-ls%");
  for (const std::string& f : files) {
    try {
      const Scenario s = load_scenario(f);
      if (!only.empty() && s.name.find(only) == std::string::npos) continue;
      const eth::Topology topo = eth::load_topology(s.topology_path);
      const eth::ModelConfig model = eth::load_model_config(s.model_path);
      const auto t0 = std::chrono::steady_clock::now();
      const double cpu0 = thread_cpu_ms();
      const eth::PrecisionPaths paths =
          precision == "figures" ? figures_paths(topo) : eth::precision_paths(topo, eth::kernels::parse_precision(precision));
      const CostModel cost(topo, model, s.seq_len, profiles_for(topo, model, s.seq_len, available, s.micro_batches, paths));
      const PlanRequest request{s.global_batch, s.micro_batches, 1};
      const Candidate hpp = search_hpp(cost, request, s.source).front();
      const double plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      nlohmann::json r = {{"scenario", s.name}, {"gpus", topo.world_size()}, {"layers", model.num_layers},
                          {"global_batch", s.global_batch}, {"planning_ms", plan_ms},
                          {"planning_cpu_ms", thread_cpu_ms() - cpu0},
                          {"hpp_ms", hpp.simulation.iteration_ms}, {"hpp_analytic_ms", hpp.estimate.iteration_ms},
                          {"hpp_plan", hpp.label}};
      // The same search with one rank per stage: what intra-stage sample splitting adds.
      const Candidate narrow = search_hpp(cost, {s.global_batch, s.micro_batches, 1, 1}, s.source).front();
      r["hpp_one_rank_per_stage_ms"] = narrow.simulation.iteration_ms;
      r["hpp_one_rank_per_stage_plan"] = narrow.label;
      r["speedup_vs_one_rank_per_stage"] = narrow.simulation.iteration_ms / hpp.simulation.iteration_ms;
      double x[3] = {0, 0, 0};
      const char* names[3] = {"uniform", "layer_balanced", "metis"};
      std::vector<Candidate> starts = {hpp};
      starts.back().label = "HPP";
      for (int b = 0; b < 3; b++) {
        try {
          const auto t1 = std::chrono::steady_clock::now();
          const Candidate base = b == 0   ? baseline_uniform(cost, request, s.source)
                                 : b == 1 ? baseline_layer_balanced(cost, request, s.source)
                                          : baseline_metis(cost, request, s.source);
          r[std::string(names[b]) + "_planning_ms"] =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
          r[std::string(names[b]) + "_ms"] = base.simulation.iteration_ms;
          r[std::string(names[b]) + "_plan"] = base.label;
          x[b] = base.simulation.iteration_ms / hpp.simulation.iteration_ms;
          r[std::string("speedup_vs_") + names[b]] = x[b];
          starts.push_back(base);
          starts.back().label = b == 0 ? "uniform" : b == 1 ? "layer-balanced" : "Metis";
          if (b == 2) r["metis_plan_text"] = describe(topo, base.plan);
        } catch (const eth::InputError& e) {
          r[std::string(names[b]) + "_ms"] = nullptr;
          r[std::string(names[b]) + "_error"] = e.what();
        }
      }
      // The local search from HPP's plan, the baselines' and random ones: where it finds a faster
      // plan, the HPP search missed it.
      const LocalSearchResult found = local_search(cost, request, starts, ls, s.source);
      const double ls_ms = found.best.simulation.iteration_ms;
      r["local_search_ms"] = ls_ms;
      r["local_search_plan"] = found.best.label;
      r["local_search_plan_text"] = describe(topo, found.best.plan);
      r["local_search_wall_ms"] = found.wall_ms;
      r["local_search_moves"] = found.moves;
      r["local_search_evaluated"] = found.evaluated;
      r["local_search_seed"] = ls.seed;
      nlohmann::json per_start = nlohmann::json::array();
      for (const LocalSearchStart& st : found.starts)
        per_start.push_back({{"start", st.label}, {"start_ms", st.start_ms}, {"best_ms", st.end_ms}});
      r["local_search_starts"] = per_start;
      r["hpp_vs_local_search_pct"] = 100 * (hpp.simulation.iteration_ms - ls_ms) / ls_ms;
      r["hpp_plan_text"] = describe(topo, hpp.plan);
      auto num = [&](const char* k) { return r[k].is_null() ? std::string("no fit") : eth::strprintf("%.1f", r[k].get<double>()); };
      std::cout << eth::strprintf("%-22s %5d %6d %9.1f %9.1f %9.1f %9s %9s %9s %9.1f %6.2f %6.2f %6.2f %6.2f %8.2f\n",
                                  s.name.c_str(), topo.world_size(), model.num_layers, plan_ms, hpp.simulation.iteration_ms,
                                  narrow.simulation.iteration_ms, num("uniform_ms").c_str(), num("layer_balanced_ms").c_str(),
                                  num("metis_ms").c_str(), ls_ms, r["speedup_vs_one_rank_per_stage"].get<double>(), x[0], x[1],
                                  x[2], r["hpp_vs_local_search_pct"].get<double>());
      std::cout << "    HPP:          " << r["hpp_plan_text"].get<std::string>() << "\n";
      if (r.contains("metis_plan_text")) std::cout << "    Metis:        " << r["metis_plan_text"].get<std::string>() << "\n";
      std::cout << "    local search: " << r["local_search_plan_text"].get<std::string>() << " (" << found.best.label
                << ", " << eth::strprintf("%.0f s", found.wall_ms / 1000) << ")\n";
      std::cout.flush();
      results.push_back(r);
    } catch (const eth::InputError& e) {
      std::cerr << "bench_planner: " << e.what() << '\n';
    }
  }
  eth::bench::write_stamped(out, {{"benchmark", "planner"}, {"precision", precision}, {"scenarios", results}}, load_at_start);
  std::cout << "wrote " << out << '\n';
  return 0;
}

// Planner benchmark: for every scenario in inputs/scenarios, the HPP search's wall time (one
// core) and the simulated iteration time of its plan against the uniform and layer-balanced
// baselines. Prints a table and writes JSON (default bench/results/planner.json). Never asserts.
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "lib/input_error.hpp"
#include "lib/planner/summary.hpp"
#include "lib/strprintf.hpp"

namespace fs = std::filesystem;
using namespace eth::planner;

int main(int argc, char** argv) {
  std::string dir = "inputs/scenarios", out = "bench/results/planner.json", profiles = "inputs/profiles";
  boost::program_options::options_description desc("bench_planner options");
  desc.add_options()("scenarios", boost::program_options::value(&dir)->default_value(dir), "scenario directory")(
      "profiles", boost::program_options::value(&profiles)->default_value(profiles), "profile directory")(
      "out", boost::program_options::value(&out)->default_value(out), "JSON output");
  boost::program_options::variables_map vm;
  boost::program_options::store(boost::program_options::parse_command_line(argc, argv, desc), vm);
  boost::program_options::notify(vm);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  const std::vector<Profile> available = load_profile_dir(profiles);
  nlohmann::json results = nlohmann::json::array();
  std::cout << eth::strprintf("%-20s %5s %7s %10s %10s %10s %10s %10s %8s %8s %8s\n", "scenario", "gpus", "layers",
                              "plan_ms", "hpp_ms", "hpp_w1_ms", "uniform_ms", "layerb_ms", "x_w1", "x_unif", "x_layerb");
  for (const std::string& f : files) {
    try {
      const Scenario s = load_scenario(f);
      const eth::Topology topo = eth::load_topology(s.topology_path);
      const eth::GptConfig model = eth::load_model_config(s.model_path);
      const auto t0 = std::chrono::steady_clock::now();
      const CostModel cost(topo, model, s.seq_len, profiles_for(topo, model, s.seq_len, available, s.micro_batches));
      const PlanRequest request{s.global_batch, s.micro_batches, 1};
      const Candidate hpp = search_hpp(cost, request, s.source).front();
      const double plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      nlohmann::json r = {{"scenario", s.name}, {"gpus", topo.world_size()}, {"layers", model.num_layers},
                          {"global_batch", s.global_batch}, {"planning_ms", plan_ms},
                          {"hpp_ms", hpp.simulation.iteration_ms}, {"hpp_analytic_ms", hpp.estimate.iteration_ms},
                          {"hpp_plan", hpp.label}};
      // The same search with one rank per stage: what intra-stage sample splitting adds.
      const Candidate narrow = search_hpp(cost, {s.global_batch, s.micro_batches, 1, 1}, s.source).front();
      r["hpp_one_rank_per_stage_ms"] = narrow.simulation.iteration_ms;
      r["hpp_one_rank_per_stage_plan"] = narrow.label;
      r["speedup_vs_one_rank_per_stage"] = narrow.simulation.iteration_ms / hpp.simulation.iteration_ms;
      double x[2] = {0, 0};
      const char* names[2] = {"uniform", "layer_balanced"};
      for (int b = 0; b < 2; b++) {
        try {
          const Candidate base = b == 0 ? baseline_uniform(cost, request, s.source) : baseline_layer_balanced(cost, request, s.source);
          r[std::string(names[b]) + "_ms"] = base.simulation.iteration_ms;
          r[std::string(names[b]) + "_plan"] = base.label;
          x[b] = base.simulation.iteration_ms / hpp.simulation.iteration_ms;
          r[std::string("speedup_vs_") + names[b]] = x[b];
        } catch (const eth::InputError& e) {
          r[std::string(names[b]) + "_ms"] = nullptr;
          r[std::string(names[b]) + "_error"] = e.what();
        }
      }
      auto num = [&](const char* k) { return r[k].is_null() ? std::string("no fit") : eth::strprintf("%.1f", r[k].get<double>()); };
      std::cout << eth::strprintf("%-20s %5d %7d %10.1f %10.1f %10.1f %10s %10s %8.2f %8.2f %8.2f\n", s.name.c_str(),
                                  topo.world_size(), model.num_layers, plan_ms, hpp.simulation.iteration_ms,
                                  narrow.simulation.iteration_ms, num("uniform_ms").c_str(), num("layer_balanced_ms").c_str(),
                                  r["speedup_vs_one_rank_per_stage"].get<double>(), x[0], x[1]);
      results.push_back(r);
    } catch (const eth::InputError& e) {
      std::cerr << "bench_planner: " << e.what() << '\n';
    }
  }
  fs::create_directories(fs::path(out).parent_path());
  std::ofstream(out) << nlohmann::json{{"benchmark", "planner"}, {"scenarios", results}}.dump(2) << '\n';
  std::cout << "wrote " << out << '\n';
  return 0;
}

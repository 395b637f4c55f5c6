#include "lib/planner/summary.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>

#include "kernels/backend.hpp"
#include "kernels/backend_select.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/base/yaml_fields.hpp"
#include "lib/plan/grad_blocks.hpp"
#include "lib/plan/plan_validation.hpp"
#include "lib/planner/measure.hpp"
#include "lib/planner/plan_drawing.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth::planner {
namespace fs = std::filesystem;

Scenario load_scenario(const std::string& path) {
  const yaml::Field root = yaml::load_file(path, "scenario");
  Scenario s;
  s.source = path;
  const fs::path dir = fs::path(path).parent_path();
  s.name = root.child("name").as_string();
  s.topology_path = (dir / root.child("topology").as_string()).lexically_normal().string();
  s.model_path = (dir / root.child("model").as_string()).lexically_normal().string();
  s.global_batch = root.child("global_batch").as_int(1, 1 << 24);
  s.seq_len = root.child("seq_len").as_int(1, 1 << 24);
  if (root.has("micro_batches")) s.micro_batches = root.child("micro_batches").as_ints(1, 1 << 16);
  if (s.micro_batches.empty()) root.child("micro_batches").fail("at least one micro-batch size", "an empty list");
  return s;
}

namespace {

// "4" or "1-3" (consecutive) or "0,2,5".
std::string rank_list(const std::vector<int>& ranks) {
  bool consecutive = true;
  for (size_t i = 1; i < ranks.size(); i++) consecutive = consecutive && ranks[i] == ranks[i - 1] + 1;
  if (consecutive && ranks.size() > 1) return strprintf("%d-%d", ranks.front(), ranks.back());
  std::string out;
  for (size_t i = 0; i < ranks.size(); i++) out += strprintf("%s%d", i ? "," : "", ranks[i]);
  return out;
}

// "A100-80GB", "3x T4-16GB" or "A100-80GB,T4-16GB".
std::string device_list(const Topology& topo, const std::vector<int>& ranks) {
  const std::string& first = topo.device_of(ranks.front()).name;
  const bool same = std::all_of(ranks.begin(), ranks.end(), [&](int r) { return topo.device_of(r).name == first; });
  if (same) return ranks.size() == 1 ? first : strprintf("%zux %s", ranks.size(), first.c_str());
  std::string out;
  for (size_t i = 0; i < ranks.size(); i++) out += strprintf("%s%s", i ? "," : "", topo.device_of(ranks[i]).name.c_str());
  return out;
}

// --micro-batches: positive sizes, strictly ascending (a profile's entries are).
void check_micro_batches(const std::vector<int>& sizes) {
  std::string given;
  for (int b : sizes) given += strprintf("%s%d", given.empty() ? "" : " ", b);
  for (size_t i = 0; i < sizes.size(); i++)
    if (sizes[i] < 1 || (i > 0 && sizes[i] <= sizes[i - 1]))
      fail_input("command line", "--micro-batches", "positive sample counts in ascending order", given);
}

}  // namespace

void print_summary(std::ostream& out, const CostModel& cost, const Candidate& c) {
  const Topology& topo = cost.topology();
  out << strprintf("plan: %s\n", c.label.c_str());
  out << strprintf("%-4s %-6s %-7s %-16s %-12s %-8s %-8s %-8s %-10s %s\n", "pipe", "stage", "ranks", "devices", "layers",
                   "samples", "mb x m", "split", "recompute", "memory GB / device GB (fullest rank)");
  for (size_t p = 0; p < c.plan.pipelines.size(); p++) {
    const PlanPipeline& pipe = c.plan.pipelines[p];
    for (size_t s = 0; s < pipe.stages.size(); s++) {
      const PlanStage& st = pipe.stages[s];
      std::string split;
      for (size_t i = 0; i < st.split.size(); i++) split += strprintf("%s%d", i ? ":" : "", st.split[i]);
      const int fullest = *std::max_element(st.ranks.begin(), st.ranks.end(), [&](int a, int b) {
        return c.estimate.memory_gb[a] / topo.device_of(a).memory_gb < c.estimate.memory_gb[b] / topo.device_of(b).memory_gb;
      });
      out << strprintf("%-4s %-6zu %-7s %-16s [%3d, %3d)   %-8s %-8s %-8s %-10s %.2f/%g\n", s == 0 ? std::to_string(p).c_str() : "", s,
                       rank_list(st.ranks).c_str(), device_list(topo, st.ranks).c_str(), st.layers.begin, st.layers.end,
                       s == 0 ? std::to_string(pipe.samples()).c_str() : "",
                       s == 0 ? strprintf("%dx%d", pipe.micro_batch, pipe.micro_batches).c_str() : "", split.c_str(),
                       to_string(st.recompute).c_str(), c.estimate.memory_gb[fullest], topo.device_of(fullest).memory_gb);
    }
    out << strprintf("     pipeline %zu: analytic %.2f ms, simulated %.2f ms\n", p, c.estimate.pipeline_ms[p],
                     c.simulation.pipeline_ms[p]);
  }
  out << strprintf("iteration: simulated %.2f ms, analytic %.2f ms (slowest pipeline %.2f + exposed reduction %.2f + "
                   "optimizer %.2f)\n",
                   c.simulation.iteration_ms, c.estimate.iteration_ms, c.estimate.iteration_ms - c.estimate.reduction_ms -
                   c.estimate.optimizer_ms, c.estimate.reduction_ms, c.estimate.optimizer_ms);
  if (!c.plan.sharded_blocks.empty()) {
    const std::vector<GradBlock> blocks = derive_grad_blocks(c.plan, cost.model().num_layers);
    out << "AdamW moments sharded among the owners of block(s):";
    for (int b : c.plan.sharded_blocks)
      out << strprintf(" %d (%s, %zu owners)", b, units_name(blocks[b].unit_begin, blocks[b].unit_end, cost.model().num_layers).c_str(),
                       blocks[b].owners.size());
    out << '\n';
  }
  print_memory(out, topo, c.estimate.memory);
}

void print_memory(std::ostream& out, const Topology& topo, const std::vector<MemoryBytes>& memory) {
  out << strprintf("predicted peak memory per rank, GB (idle ranks left out; consecutive equal ranks in one row):\n"
                   "%-10s %-16s %10s %10s %10s %11s %10s %10s %s\n", "ranks", "device", "parameters", "gradients",
                   "optimizer", "activations", "workspace", "total", "of device");
  auto same = [&](size_t a, size_t b) {
    const MemoryBytes &x = memory[a], &y = memory[b];
    return topo.ranks[a].device_type == topo.ranks[b].device_type && x.parameters == y.parameters &&
           x.optimizer == y.optimizer && x.activations == y.activations && x.workspace == y.workspace;
  };
  for (size_t r = 0; r < memory.size();) {
    size_t end = r + 1;
    while (end < memory.size() && same(r, end)) end++;
    const MemoryBytes& m = memory[r];
    const DeviceType& dev = topo.device_of(static_cast<int>(r));
    const std::string ranks = end - r == 1 ? std::to_string(r) : strprintf("%zu-%zu", r, end - 1);
    if (m.total() > 0)
      out << strprintf("%-10s %-16s %10.3f %10.3f %10.3f %11.3f %10.3f %10.3f %.0f%%\n", ranks.c_str(), dev.name.c_str(),
                       m.parameters * 1e-9, m.gradients * 1e-9, m.optimizer * 1e-9, m.activations * 1e-9,
                       m.workspace * 1e-9, m.total() * 1e-9, 100 * m.total() * 1e-9 / dev.memory_gb);
    r = end;
  }
}

void run_plan_tool(const PlanToolOptions& o, std::ostream& out) {
  std::string topology_path = o.topology, model_path = o.model;
  int global_batch = o.global_batch, seq_len = o.seq_len;
  std::vector<int> micro_batches = o.micro_batches;
  check_micro_batches(micro_batches);
  std::string where = "command line";
  if (!o.scenario.empty()) {
    const Scenario s = load_scenario(o.scenario);
    topology_path = s.topology_path;
    model_path = s.model_path;
    global_batch = s.global_batch;
    seq_len = s.seq_len;
    if (micro_batches.empty()) micro_batches = s.micro_batches;
    where = s.source;
  }
  if (topology_path.empty()) fail_input("command line", "--topology", "a topology YAML (or --scenario)", "none");
  if (model_path.empty()) fail_input("command line", "--model", "a model YAML (or --scenario)", "none");
  if (micro_batches.empty()) micro_batches = {1, 2, 4, 8};
  const Topology topo = load_topology(topology_path);
  const GptConfig model = load_model_config(model_path);
  if (seq_len < 1 || seq_len > model.max_seq_len)
    fail_input(where, "seq_len", strprintf("1 .. %d, the model's max_seq_len", model.max_seq_len), std::to_string(seq_len));

  std::vector<Profile> available;
  if (!o.profiles_dir.empty() && fs::is_directory(o.profiles_dir)) available = load_profile_dir(o.profiles_dir);
  for (const std::string& f : o.profile_files) available.insert(available.begin(), load_profile(f));
  std::vector<Profile> profiles = profiles_for(topo, model, seq_len, available, micro_batches);
  for (const Profile& p : profiles)
    out << strprintf("profile %-14s %s (%s)\n", p.device_type.c_str(), p.estimate ? "ESTIMATE" : "measured", p.source.c_str());
  CostModel cost(topo, model, seq_len, std::move(profiles));
  if (o.shard_optimizer && o.evaluate.empty())
    fail_input("command line", "--shard-optimizer", "--evaluate PLAN (a search chooses sharding per block itself: --memory-savers)",
               "a search");
  cost.set_shard_optimizer(o.shard_optimizer);
  if (o.memory_savers != "all" && o.memory_savers != "recompute" && o.memory_savers != "none")
    fail_input("command line", "--memory-savers", "'all', 'recompute' or 'none'", "'" + o.memory_savers + "'");
  cost.set_allow_recompute(o.memory_savers != "none");
  cost.set_allow_sharding(o.memory_savers == "all");

  std::vector<Candidate> chosen;
  if (!o.evaluate.empty()) {
    Plan plan = load_plan(o.evaluate);
    validate_plan(plan, topo, model);
    chosen.push_back(evaluate_plan(cost, plan, "evaluate " + o.evaluate));
  } else {
    if (global_batch < 1) fail_input(where, "global_batch", "a positive number of samples (--batch)", std::to_string(global_batch));
    if (o.max_stage_width < 0)
      fail_input("command line", "--max-stage-width", "0 (no limit) or a positive number of ranks", std::to_string(o.max_stage_width));
    const PlanRequest request{global_batch, micro_batches, std::max(1, o.top), o.max_stage_width};
    if (o.baseline == "uniform") chosen.push_back(baseline_uniform(cost, request, where));
    else if (o.baseline == "layer-balanced") chosen.push_back(baseline_layer_balanced(cost, request, where));
    else if (o.baseline == "metis") chosen.push_back(baseline_metis(cost, request, where));
    else if (o.baseline.empty()) chosen = search_hpp(cost, request, where);
    else fail_input("command line", "--baseline", "'uniform', 'layer-balanced' or 'metis'", "'" + o.baseline + "'");
  }
  for (size_t i = 0; i < chosen.size(); i++) {
    out << strprintf("\n#%zu ", i + 1);
    print_summary(out, cost, chosen[i]);
  }
  Plan best = chosen.front().plan;
  best.source = o.out;
  validate_plan(best, topo, model);
  if (o.evaluate.empty()) {
    save_plan(best, o.out);
    out << "wrote " << o.out << '\n';
  }
  if (!o.draw.empty()) {
    write_plan_drawing(cost, o.evaluate.empty() ? best : chosen.front().plan, o.draw);  // titled by its file
    out << "wrote " << o.draw << '\n';
  }
}

void run_profile_tool(const ProfileToolOptions& o, MPI_Comm ranks, std::ostream& out) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(ranks, &rank));
  if (o.model.empty()) fail_input("command line", "--model", "a model YAML", "none");
  const GptConfig model = load_model_config(o.model);
  if (o.seq_len < 1 || o.seq_len > model.max_seq_len)
    fail_input("command line", "--seq-len", strprintf("1 .. %d, the model's max_seq_len", model.max_seq_len), std::to_string(o.seq_len));
  check_micro_batches(o.micro_batches);
  if (o.repetitions < 1)
    fail_input("command line", "--repetitions", "at least 1 timed run per measurement", std::to_string(o.repetitions));
  auto name = [&](const std::string& device) { return strprintf("%s-%s-T%d.yaml", device.c_str(), model.name.c_str(), o.seq_len); };
  if (!o.estimate_topology.empty()) {
    const Topology topo = load_topology(o.estimate_topology);
    if (rank != 0) return;
    for (const DeviceType& t : topo.device_types) {
      const std::string path = (fs::path(o.out_dir) / name(t.name)).string();
      save_profile(roofline_profile(t, model, o.seq_len, o.micro_batches, topo.source), path);
      out << "wrote " << path << " (roofline estimate)\n";
    }
    return;
  }
  // The backend eth_train would use on this rank: the GPU of its local rank, or the CPU.
  kernels::BackendChoice choice;
  std::string error;
  try {
    choice = kernels::select_backend(o.local_rank, o.local_ranks);
  } catch (const std::invalid_argument& e) {
    error = strprintf("rank %d: %s", rank, e.what());
  }
  if (const std::string agreed = agreed_error(error); !agreed.empty()) throw InputError(agreed);
  if (rank == 0) out << choice.note << '\n';
  kernels::Backend* backend = choice.backend.get();
  const Profile p = measure_profile(*backend, model, o.device_type, {o.micro_batches, o.seq_len, o.repetitions}, ranks);
  if (rank != 0) return;
  const std::string path = o.out.empty() ? (fs::path(o.out_dir) / name(o.device_type)).string() : o.out;
  save_profile(p, path);
  out << strprintf("%-6s %-22s %-22s %-22s\n", "mb", "embedding fwd/bwd ms", "layer fwd/bwd ms", "head fwd/bwd ms");
  for (const ProfileEntry& e : p.entries)
    out << strprintf("%-6d %9.3f / %-10.3f %9.3f / %-10.3f %9.3f / %-10.3f\n", e.micro_batch, e.embedding.forward_ms,
                     e.embedding.backward_ms, e.layer.forward_ms, e.layer.backward_ms, e.head.forward_ms, e.head.backward_ms);
  out << strprintf("optimizer %.3f ms per million parameters\nwrote %s\n", p.optimizer_ms_per_mparam, path.c_str());
}


}  // namespace eth::planner

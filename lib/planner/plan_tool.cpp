#include "lib/planner/plan_tool.hpp"

#include <filesystem>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/plan/plan_validation.hpp"
#include "lib/planner/micro_batches.hpp"
#include "lib/planner/plan_drawing.hpp"
#include "lib/planner/plan_summary.hpp"
#include "lib/planner/scenario.hpp"
#include "lib/planner/search.hpp"

namespace eth::planner {
namespace fs = std::filesystem;

namespace {

// What to plan for: from --scenario, else from the options themselves.
struct PlanInputs {
  std::string topology_path, model_path;
  int global_batch = 0, seq_len = 0;
  std::vector<int> micro_batches;
  std::string where = "command line";  // names the source in error messages
};

PlanInputs plan_inputs(const PlanToolOptions& o) {
  PlanInputs in{o.topology, o.model, o.global_batch, o.seq_len, o.micro_batches};
  check_micro_batches(in.micro_batches);
  if (!o.scenario.empty()) {
    const Scenario s = load_scenario(o.scenario);
    in.topology_path = s.topology_path;
    in.model_path = s.model_path;
    in.global_batch = s.global_batch;
    in.seq_len = s.seq_len;
    if (in.micro_batches.empty()) in.micro_batches = s.micro_batches;
    in.where = s.source;
  }
  if (in.topology_path.empty()) fail_input("command line", "--topology", "a topology YAML (or --scenario)", "none");
  if (in.model_path.empty()) fail_input("command line", "--model", "a model YAML (or --scenario)", "none");
  if (in.micro_batches.empty()) in.micro_batches = kDefaultMicroBatches;
  return in;
}

// --shard-optimizer and --memory-savers: what the cost model may trade for memory.
void set_memory_savers(const PlanToolOptions& o, CostModel& cost) {
  if (o.shard_optimizer && o.evaluate.empty())
    fail_input("command line", "--shard-optimizer", "--evaluate PLAN (a search chooses sharding per block itself: --memory-savers)",
               "a search");
  cost.set_shard_optimizer(o.shard_optimizer);
  if (o.memory_savers != "all" && o.memory_savers != "recompute" && o.memory_savers != "none")
    fail_input("command line", "--memory-savers", "'all', 'recompute' or 'none'", "'" + o.memory_savers + "'");
  cost.set_allow_recompute(o.memory_savers != "none");
  cost.set_allow_sharding(o.memory_savers == "all");
}

// The --evaluate plan, a --baseline, or the search's --top best, best first.
std::vector<Candidate> choose_plans(const PlanToolOptions& o, const PlanInputs& in, const CostModel& cost) {
  if (!o.evaluate.empty()) {
    Plan plan = load_plan(o.evaluate);
    validate_plan(plan, cost.topology(), cost.model());
    return {evaluate_plan(cost, plan, "evaluate " + o.evaluate)};
  }
  if (in.global_batch < 1)
    fail_input(in.where, "global_batch", "a positive number of samples (--batch)", std::to_string(in.global_batch));
  if (o.max_stage_width < 0)
    fail_input("command line", "--max-stage-width", "0 (no limit) or a positive number of ranks", std::to_string(o.max_stage_width));
  const PlanRequest request{in.global_batch, in.micro_batches, std::max(1, o.top), o.max_stage_width};
  if (o.baseline == "uniform") return {baseline_uniform(cost, request, in.where)};
  if (o.baseline == "layer-balanced") return {baseline_layer_balanced(cost, request, in.where)};
  if (o.baseline == "metis") return {baseline_metis(cost, request, in.where)};
  if (!o.baseline.empty()) fail_input("command line", "--baseline", "'uniform', 'layer-balanced' or 'metis'", "'" + o.baseline + "'");
  return search_hpp(cost, request, in.where);
}

}  // namespace

void run_plan_tool(const PlanToolOptions& o, std::ostream& out) {
  const PlanInputs in = plan_inputs(o);
  const Topology topo = load_topology(in.topology_path);
  const ModelConfig model = load_model_config(in.model_path);
  if (in.seq_len < 1 || in.seq_len > model.max_seq_len)
    fail_input(in.where, "seq_len", strprintf("1 .. %d, the model's max_seq_len", model.max_seq_len), std::to_string(in.seq_len));
  const PrecisionPaths paths = precision_paths(topo, o.precision);
  CostModel cost(topo, model, in.seq_len,
                 job_profiles(topo, model, in.seq_len, o.profiles_dir, o.profile_files, in.micro_batches, paths, &out));
  set_memory_savers(o, cost);

  const std::vector<Candidate> chosen = choose_plans(o, in, cost);
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

}  // namespace eth::planner

#include "lib/job/auto_plan.hpp"

#include <mpi.h>

#include <filesystem>

#include "lib/base/strprintf.hpp"
#include "lib/job/agreed.hpp"
#include "lib/planner/plan_summary.hpp"
#include "lib/planner/search.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth::planner {
namespace {

// The micro-batch sizes the search may give a pipeline.
const std::vector<int> kMicroBatches = {1, 2, 4, 8};

// Rank 0: the plan for `topology`, printed to `log` and written beside the metrics.
Plan plan_on_rank0(const TrainOptions& o, const GptConfig& model, const Topology& topology, std::ostream& log) {
  const CostModel cost = job_cost_model(o, model, topology, &log);
  const PlanRequest request{o.global_batch, kMicroBatches, 1, 0};
  const Candidate best = search_hpp(cost, request, "--batch " + std::to_string(o.global_batch)).front();
  print_summary(log, cost, best);
  std::filesystem::create_directories(o.output_dir);
  save_topology(topology, o.output_dir + "/topology.yaml");
  Plan plan = best.plan;
  plan.source = o.output_dir + "/plan.yaml";
  save_plan(plan, plan.source);
  log << strprintf("planned without --plan: wrote %s and %s/topology.yaml\n", plan.source.c_str(), o.output_dir.c_str());
  return plan;
}

}  // namespace

CostModel job_cost_model(const TrainOptions& o, const GptConfig& model, const Topology& topology, std::ostream* log) {
  std::vector<Profile> available;
  if (std::filesystem::is_directory(o.profiles_dir)) available = load_profile_dir(o.profiles_dir);
  for (const std::string& f : o.profile_files) {
    available.insert(available.begin(), load_profile(f));
    check_profile_precision(available.front(), topology, o.precision);
  }
  std::vector<Profile> profiles = profiles_for(topology, model, o.seq_len, available, kMicroBatches, o.precision);
  if (log != nullptr)
    for (const Profile& p : profiles)
      *log << strprintf("profile %-14s %s %s (%s)\n", p.device_type.c_str(), p.estimate ? "ESTIMATE" : "measured",
                        p.precision.c_str(), p.source.c_str());
  return CostModel(topology, model, o.seq_len, std::move(profiles));
}

Plan plan_this_job(const TrainOptions& options, const GptConfig& model, const Topology& topology, std::ostream& log) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(world_comm(), &rank));
  std::string plan_text;
  agreed([&] {
    if (rank == 0) plan_text = plan_yaml(plan_on_rank0(options, model, topology, log));
  });
  return plan_from_yaml(broadcast_text(plan_text), options.output_dir + "/plan.yaml");
}

}  // namespace eth::planner

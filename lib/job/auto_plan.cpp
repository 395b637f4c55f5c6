#include "lib/job/auto_plan.hpp"

#include <mpi.h>

#include <filesystem>
#include <fstream>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/job/topology_discovery.hpp"
#include "lib/planner/search.hpp"
#include "lib/planner/plan_summary.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth::planner {
namespace {

// Rank 0: the plan for `topology`, printed to `log` and written beside the metrics.
Plan plan_on_rank0(const AutoPlanRequest& r, const Topology& topology, std::ostream& log) {
  const GptConfig model = load_model_config(r.model_path);
  std::vector<Profile> available;
  if (std::filesystem::is_directory(r.profiles_dir)) available = load_profile_dir(r.profiles_dir);
  for (const std::string& f : r.profile_files) available.insert(available.begin(), load_profile(f));
  std::vector<Profile> profiles = profiles_for(topology, model, r.seq_len, available, r.micro_batches);
  for (const Profile& p : profiles)
    log << strprintf("profile %-14s %s (%s)\n", p.device_type.c_str(), p.estimate ? "ESTIMATE" : "measured", p.source.c_str());
  const CostModel cost(topology, model, r.seq_len, std::move(profiles));
  const PlanRequest request{r.global_batch, r.micro_batches, 1, 0};
  const Candidate best = search_hpp(cost, request, "--batch " + std::to_string(r.global_batch)).front();
  print_summary(log, cost, best);
  std::filesystem::create_directories(r.output_dir);
  save_topology(topology, r.output_dir + "/topology.yaml");
  Plan plan = best.plan;
  plan.source = r.output_dir + "/plan.yaml";
  save_plan(plan, plan.source);
  log << strprintf("planned without --plan: wrote %s and %s/topology.yaml\n", plan.source.c_str(), r.output_dir.c_str());
  return plan;
}

}  // namespace

PlannedJob plan_this_job(const AutoPlanRequest& request, std::ostream& log) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(world_comm(), &rank));
  std::string error, topology_text, plan_text;
  try {
    const Topology topology = discover_topology(DiscoveryOptions{});  // complete on rank 0
    if (rank == 0) {
      topology_text = topology_yaml(topology);
      plan_text = plan_yaml(plan_on_rank0(request, topology, log));
    }
  } catch (const InputError& e) {
    error = e.what();
  }
  if (const std::string agreed = agreed_error(error); !agreed.empty()) throw AgreedError(agreed);
  PlannedJob job;
  job.topology = topology_from_yaml(broadcast_text(topology_text), "the discovered topology");
  job.plan = plan_from_yaml(broadcast_text(plan_text), request.output_dir + "/plan.yaml");
  return job;
}

}  // namespace eth::planner

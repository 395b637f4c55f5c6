#include "lib/job/auto_plan.hpp"

#include <mpi.h>

#include "lib/base/strprintf.hpp"
#include "lib/job/agreed.hpp"
#include "lib/planner/micro_batches.hpp"
#include "lib/planner/plan_summary.hpp"
#include "lib/planner/search.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth::planner {
namespace {

// Rank 0: the plan for `topology`, printed to `log` and written beside the metrics.
Plan plan_on_rank0(const TrainOptions& o, const ModelConfig& model, const Topology& topology, const PrecisionPaths& paths,
                   std::ostream& log) {
  const CostModel cost = job_cost_model(o, model, topology, paths, &log);
  const PlanRequest request{o.global_batch, kDefaultMicroBatches, 1, 0};
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

CostModel job_cost_model(const TrainOptions& o, const ModelConfig& model, const Topology& topology, const PrecisionPaths& paths,
                         std::ostream* log) {
  std::vector<Profile> profiles = job_profiles(topology, model, o.seq_len, o.profiles_dir, o.profile_files, kDefaultMicroBatches,
                                               paths, log);
  return CostModel(topology, model, o.seq_len, std::move(profiles));
}

Plan plan_this_job(const TrainOptions& options, const ModelConfig& model, const Topology& topology,
                   const PrecisionPaths& paths, std::ostream& log) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(world_comm(), &rank));
  std::string plan_text;
  agreed([&] {
    if (rank == 0) plan_text = plan_yaml(plan_on_rank0(options, model, topology, paths, log));
  });
  return plan_from_yaml(broadcast_text(plan_text), options.output_dir + "/plan.yaml");
}

}  // namespace eth::planner

#include "lib/job/job.hpp"

#include <mpi.h>

#include <filesystem>

#include "lib/io/checkpoint_files.hpp"
#include "lib/io/metrics.hpp"
#include "lib/job/agreed.hpp"
#include "lib/job/auto_plan.hpp"
#include "lib/job/device_check.hpp"
#include "lib/job/job_rules.hpp"
#include "lib/job/topology_discovery.hpp"
#include "lib/model/stage.hpp"
#include "lib/runtime/preemption.hpp"
#include "lib/runtime/rebalance.hpp"
#include "mpi_topology/watchdog.hpp"

namespace eth {
namespace {

// The checkpoint to resume from, checked by rank 0 before any rank opens it (its seal, then every
// dataset: HDF5 itself may crash on a damaged file). `--resume latest`: OUTPUT_DIR's newest
// undamaged checkpoint, naming those it skipped. Collective; "" without --resume.
std::string resolve_resume(const TrainOptions& o, const ModelConfig& model, int rank, std::ostream& log) {
  if (o.resume_path.empty()) return "";
  std::string path = o.resume_path;
  agreed([&] {
    if (rank != 0) return;
    if (path == "latest") path = resolve_latest_checkpoint(o.output_dir, model, log);
    else if (const std::string damaged = verify_sealed_checkpoint(path, model); !damaged.empty()) throw InputError(damaged);
  });
  return broadcast_text(path);
}

// Without --topology: the job describes itself as eth_topo does. Collective.
Topology discovered_topology(int world_size, const kernels::DeviceSettings& device) {
  Topology topology;
  DiscoveryOptions options;
  options.device = device;
  agreed([&] { topology = discover_topology(options); });  // complete on rank 0
  // One rank has nothing to share; it keeps an unknown GPU's zero peaks (no MFU), which the YAML
  // reader would refuse.
  if (world_size > 1) topology = topology_from_yaml(broadcast_text(topology_yaml(topology)), "the discovered topology");
  topology.source = "the discovered topology (no --topology)";
  return topology;
}

// One rank without a plan: the whole model in one stage, the batch in micro-batches.
Plan whole_model_plan(const TrainOptions& o, const ModelConfig& model) {
  Plan plan;
  plan.source = "(one rank, no --plan)";
  plan.global_batch = o.global_batch;
  plan.pipelines = {{o.micro_batch, o.global_batch / o.micro_batch, {{{0}, {0, model.num_layers}, {}}}}};
  return plan;
}

// A resumed run continues with the checkpoint's seed and, under the plan it was written with,
// with the checkpoint's batch split; what else the plan chooses (recomputation, sharded blocks)
// is this run's plan's. A step-0 checkpoint (eth_convert --import-llmc) is only a starting point:
// this run's seed.
void take_over_checkpoint(Job& job) {
  const TrainOptions& o = job.options;
  job.resume.seed = o.seed;
  if (o.resume_path.empty()) return;
  job.resume = CheckpointReader(o.resume_path, job.model).header();
  if (job.resume.step == 0) job.resume.seed = o.seed;
  if (job.resume.plan_yaml.empty()) return;
  const Plan split = plan_from_yaml(job.resume.plan_yaml, o.resume_path + " (attribute plan)");
  if (!same_stages(split, job.plan)) return;  // including another global batch: check_job refuses it
  job.plan = with_batch_split(std::move(job.plan), split);
  job.split_resumed = true;
}

}  // namespace

const char* plan_source_name(PlanSource source) {
  switch (source) {
    case PlanSource::file: return "file";
    case PlanSource::automatic: return "automatic";
    case PlanSource::one_rank: return "one rank";
  }
  return "";
}

Job load_job(const TrainOptions& options, std::ostream& log) {
  Job job;
  job.options = options;
  const TrainOptions& o = job.options;
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(world_comm(), &rank));
  MPI_CHECK(MPI_Comm_size(world_comm(), &job.world_size));
  install_preemption_handlers();  // a stop requested while the job loads takes effect after its first step
  job.plan_source = !o.plan_path.empty() ? PlanSource::file : job.world_size > 1 ? PlanSource::automatic : PlanSource::one_rank;
  agreed([&] {
    check_options(o, job.world_size);
    job.model = load_model_config(o.model_path);
    Stage::check_computes(job.model, o.model_path);
    check_against_model(o, job.model);
    if (job.plan_source == PlanSource::file) {
      job.topology = load_topology(o.topology_path);
      job.plan = load_plan(o.plan_path);
    }
  });
  arm_watchdog(o.collective_timeout_s);  // every collective from here on is watched
  if (job.plan_source == PlanSource::file) check_devices_match(job.topology, o.device);
  job.options.resume_path = resolve_resume(o, job.model, rank, log);
  if (job.plan_source != PlanSource::file) job.topology = discovered_topology(job.world_size, o.device);
  agreed([&] { job.precision = precision_paths(job.topology, o.precision); });
  // One loss scale for the job, dynamic where any rank's path computes on a scaled loss.
  job.options.loss_scale.dynamic = job.precision.loss_scaled();
  if (job.plan_source == PlanSource::automatic)
    job.plan = planner::plan_this_job(o, job.model, job.topology, job.precision, log);
  if (job.plan_source == PlanSource::one_rank) job.plan = whole_model_plan(o, job.model);
  agreed([&] {
    take_over_checkpoint(job);
    check_job(job);
    for (const std::string& p : o.train_shards) job.train.push_back(load_token_shard(p, job.model.vocab_size));
    for (const std::string& p : o.val_shards) job.val.push_back(load_token_shard(p, job.model.vocab_size));
    if (rank == 0) {
      std::filesystem::create_directories(o.output_dir);
      MetricsWriter probe(o.output_dir + "/metrics.jsonl", job.resume.step);
    }
  });
  return job;
}

}  // namespace eth

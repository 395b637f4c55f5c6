#include "lib/job/trainer.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/io/checkpoint.hpp"
#include "lib/io/checkpoint_files.hpp"
#include "lib/io/metrics.hpp"
#include "lib/io/token_data.hpp"
#include "lib/model/model_config.hpp"
#include "lib/plan/grad_blocks.hpp"
#include "lib/plan/memory_model.hpp"
#include "lib/plan/plan.hpp"
#include "lib/plan/plan_validation.hpp"
#include "lib/runtime/make_rank_runtime.hpp"
#include "lib/runtime/parallel_context.hpp"
#include "lib/runtime/preemption.hpp"
#include "lib/runtime/rebalance.hpp"
#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/watchdog.hpp"

namespace eth {
namespace {

// Collective: if any rank failed, the lowest failing rank's message becomes every rank's error.
void agree_on_errors(const std::string& error) {
  const std::string agreed = agreed_error(error);
  if (!agreed.empty()) throw AgreedError(agreed);
}

// Everything a job reads from files, loaded and checked before any communication.
struct Job {
  GptConfig model;
  Topology topology;
  Plan plan;
  std::vector<TokenShard> train, val;
  CheckpointHeader resume;   // step 0: a fresh start
  bool split_resumed = false;  // the plan's batch split is the checkpoint's (re-balanced) one
};

// Without a plan: the whole model on one rank, the batch in micro-batches.
void single_rank_job(const TrainOptions& o, Job& job) {
  job.topology.source = "(one rank, no --topology)";
  job.topology.device_types = {{"this process", 1e9, 1, 0, 0, 1}};
  job.topology.nodes.resize(1);
  job.topology.nodes[0].name = "localhost";
  job.topology.nodes[0].link = {"none", 1, 0};
  job.topology.nodes[0].devices = {0};
  job.topology.ranks = {{0, 0, 0}};
  job.plan.source = "(one rank, no --plan)";
  job.plan.global_batch = o.global_batch;
  job.plan.pipelines = {{o.micro_batch, o.global_batch / o.micro_batch, {{{0}, {0, job.model.num_layers}, {}}}}};
}

// --inject-fault against this job: a rank, step and phase it has, a block the rank holds.
void check_fault(const FaultSpec& f, const TrainOptions& o, const Job& job, int world_size) {
  if (f.rank >= world_size)
    fail_input("--inject-fault", "rank", strprintf("a rank below %d, the ranks of this job", world_size), std::to_string(f.rank));
  if (f.step > o.steps)
    fail_input("--inject-fault", "step", strprintf("a step of this run, 1 to --steps %d", o.steps), std::to_string(f.step));
  if (f.phase == FaultPhase::checkpoint && !(o.checkpoint_every > 0 && (f.step % o.checkpoint_every == 0 || f.step == o.steps)))
    fail_input("--inject-fault", "step", "a step after which a checkpoint is written (--checkpoint-every)", std::to_string(f.step));
  if (f.kind != FaultKind::nan) return;
  const std::vector<GradBlock> blocks = derive_grad_blocks(job.plan, job.model.num_layers);
  std::string held;
  for (size_t b = 0; b < blocks.size(); b++)
    if (std::count(blocks[b].owners.begin(), blocks[b].owners.end(), f.rank)) held += (held.empty() ? "" : ", ") + std::to_string(b);
  if (f.block >= static_cast<int>(blocks.size()) || !std::count(blocks[f.block].owners.begin(), blocks[f.block].owners.end(), f.rank))
    fail_input("--inject-fault", "block", strprintf("a gradient block rank %d holds (%s, of blocks 0 to %zu of %s)", f.rank,
                                                    held.empty() ? "none" : held.c_str(), blocks.size() - 1, job.plan.source.c_str()),
               std::to_string(f.block));
}

Job load_job(const TrainOptions& o, int world_size) {
  Job job;
  job.model = load_model_config(o.model_path);
  if (o.seq_len <= 0 || o.seq_len > job.model.max_seq_len)
    fail_input("--seq-len", "value", "1 to max_seq_len = " + std::to_string(job.model.max_seq_len) + " of " + o.model_path,
               std::to_string(o.seq_len));
  if (o.steps <= 0) fail_input("--steps", "value", "a positive step count", std::to_string(o.steps));
  if (o.lr.warmup_steps < 0) fail_input("--warmup", "value", "a non-negative step count", std::to_string(o.lr.warmup_steps));
  if (o.train_shards.empty()) fail_input("--train-data", "value", "at least one token shard", "none");
  if (o.plan_path.empty() != o.topology_path.empty())
    fail_input(o.plan_path.empty() ? "--plan" : "--topology", "value", "given together with " +
               std::string(o.plan_path.empty() ? "--topology" : "--plan"), "nothing");
  if (o.plan) {  // planned by a zero-configuration launch
    job.topology = *o.topology;
    job.plan = *o.plan;
    validate_plan(job.plan, job.topology, job.model);
  } else if (o.plan_path.empty()) {
    if (world_size != 1)
      fail_input("--plan", "value", strprintf("a plan for the %d ranks of this job (without one, eth_train runs on 1 rank)", world_size),
                 "nothing");
    if (o.micro_batch <= 0) fail_input("--micro-batch", "value", "a positive sample count", std::to_string(o.micro_batch));
    if (o.global_batch <= 0 || o.global_batch % o.micro_batch != 0)
      fail_input("--batch", "value", "a positive multiple of --micro-batch (" + std::to_string(o.micro_batch) + ")",
                 std::to_string(o.global_batch));
    single_rank_job(o, job);
  } else {
    job.topology = load_topology(o.topology_path);
    job.plan = load_plan(o.plan_path);
    if (job.topology.world_size() != world_size)
      fail_input(o.topology_path, "nodes", strprintf("devices for the %d ranks of this job", world_size),
                 strprintf("%d devices", job.topology.world_size()));
    validate_plan(job.plan, job.topology, job.model);
  }
  // Sums to the shards' owners exist in block mode only (the same rule as --shard-optimizer's).
  if (!job.plan.sharded_blocks.empty() && o.grad_sync != GradSyncMode::block)
    fail_input(job.plan.source, "sharded_blocks", "--grad-sync block (the baselines sum whole slices)",
               std::string("--grad-sync ") + grad_sync_name(o.grad_sync));
  for (const std::string& p : o.train_shards) job.train.push_back(load_token_shard(p, job.model.vocab_size));
  for (const std::string& p : o.val_shards) job.val.push_back(load_token_shard(p, job.model.vocab_size));
  if (o.checkpoint_every < 0)
    fail_input("--checkpoint-every", "value", "0 (no checkpoints) or a positive step count", std::to_string(o.checkpoint_every));
  if (o.keep_checkpoints < 0)
    fail_input("--keep-checkpoints", "value", "0 (keep all) or a positive count", std::to_string(o.keep_checkpoints));
  if (o.rebalance.every < 0)
    fail_input("--rebalance-every", "value", "0 (no re-balancing) or a positive step count", std::to_string(o.rebalance.every));
  if (!(o.rebalance.threshold >= 0 && o.rebalance.threshold < 1))
    fail_input("--rebalance-threshold", "value", "a fraction of the step time in [0, 1)", strprintf("%g", o.rebalance.threshold));
  if (o.fault) check_fault(*o.fault, o, job, world_size);
  for (const SlowdownRule& r : o.slowdowns)
    if (r.rank >= world_size)
      fail_input("--slowdown", "value", strprintf("a rank below %d, the ranks of this job", world_size), std::to_string(r.rank));
  job.resume.seed = o.seed;
  if (!o.resume_path.empty()) {
    job.resume = CheckpointReader(o.resume_path, job.model).header();
    if (job.resume.step >= o.steps)
      fail_input("--steps", "value", strprintf("more than the %d steps %s has taken", job.resume.step, o.resume_path.c_str()),
                 std::to_string(o.steps));
    // The sample stream, the learning-rate schedule and the data order are functions of the step
    // and the global batch: another batch would skip or repeat samples. Refused, not guessed.
    // A step-0 checkpoint (eth_convert --import-llmc) is only a starting point: any batch and
    // this run's seed.
    if (job.resume.step == 0) job.resume.seed = o.seed;
    if (job.resume.step > 0 && job.resume.global_batch != job.plan.global_batch)
      fail_input(o.resume_path, "global_batch",
                 strprintf("%d, the global batch of this run (--batch or the plan's global_batch): resume with the "
                           "checkpoint's global batch",
                           job.plan.global_batch),
                 std::to_string(job.resume.global_batch));
    // Under the plan it was written with, the run continues with the checkpoint's batch split;
    // what else the plan chooses (recomputation, sharded blocks) is this run's plan's.
    if (!job.resume.plan_yaml.empty()) {
      const Plan split = plan_from_yaml(job.resume.plan_yaml, o.resume_path + " (attribute plan)");
      if (same_stages(split, job.plan)) {
        job.plan = with_batch_split(std::move(job.plan), split);
        validate_plan(job.plan, job.topology, job.model);
        job.split_resumed = true;
      }
    }
  }
  return job;
}

// The checkpoint to resume from, checked by rank 0 before any rank opens it (its seal, then every
// dataset: HDF5 itself may crash on a damaged file). `--resume latest`: OUTPUT_DIR's newest
// undamaged checkpoint, naming those it skipped. Collective; "" without --resume.
std::string resolve_resume(const TrainOptions& o, int rank, std::ostream& log) {
  if (o.resume_path.empty()) return "";
  std::string path = o.resume_path, error;
  if (rank == 0) {
    try {
      const GptConfig model = load_model_config(o.model_path);
      if (path == "latest") path = resolve_latest_checkpoint(o.output_dir, model, log);
      else error = verify_sealed_checkpoint(path, model);
    } catch (const InputError& e) {
      error = e.what();
    }
  }
  agree_on_errors(error);
  return broadcast_text(path);
}

// Per-step timing of every rank, gathered on rank 0 for the log line and metrics.
struct StepReport {
  std::vector<StepTimes> ranks;
  nlohmann::json pipelines = nlohmann::json::array();  // per pipeline: ms, bubble %
};

StepReport gather_times(const StepTimes& mine, const Plan& plan, int world) {
  StepReport report;
  report.ranks.resize(static_cast<size_t>(world));
  MPI_Request request;
  MPI_CHECK(MPI_Igather(&mine, sizeof(StepTimes), MPI_BYTE, report.ranks.data(), sizeof(StepTimes), MPI_BYTE, 0,
                        world_comm(), &request));
  watched_wait_one(request, {"the gather of step times", {}});
  for (const PlanPipeline& pipe : plan.pipelines) {
    // A pipeline's time runs until its slowest rank's last backward; its bubble is the share
    // of that time its ranks spent not computing.
    double ms = 0, compute = 0;
    int ranks = 0;
    for (const PlanStage& stage : pipe.stages)
      for (int r : stage.ranks) {
        const StepTimes& t = report.ranks[r];
        ms = std::max(ms, t.step_ms - t.reduce_ms - t.optimizer_ms);
        compute += t.compute_ms;
        ranks++;
      }
    report.pipelines.push_back({{"ms", ms}, {"bubble_pct", ms > 0 ? 100.0 * (1.0 - compute / ranks / ms) : 0.0}});
  }
  return report;
}

// The job under one batch split: the plan, this rank's context and runtime. Re-balancing
// replaces it as a whole (the runtime refers to the plan and context, and its buffers are sized
// for this split).
struct Running {
  Plan plan;
  ParallelContext ctx;
  std::unique_ptr<RankRuntime> runtime;
  std::vector<size_t> planned_bytes;  // per rank: what the memory model says it allocates
};

// Collective: communicators, the memory check and the runtime of `plan`, its state initialised
// from `seed` or taken over from `previous` (re-balancing).
std::unique_ptr<Running> start(const Job& job, Plan plan, const TrainOptions& o, kernels::Backend& backend,
                               uint64_t seed, Running* previous = nullptr) {
  auto running = std::make_unique<Running>();
  running->plan = std::move(plan);
  running->ctx = build_parallel_context(job.topology, running->plan, job.model);
  const ParallelContext& ctx = running->ctx;
  std::string error;
  // A plan that does not fit this rank's device, as the topology describes it or as the backend
  // finds it: one line naming rank and device.
  const size_t free_bytes = backend.free_memory_bytes();
  running->planned_bytes = plan_device_bytes(job.model, running->plan, ctx.world_size, o.seq_len, o.adamw.shard,
                                             backend.attention_path(o.seq_len));
  const size_t needed = running->planned_bytes[ctx.world_rank];
  char host[MPI_MAX_PROCESSOR_NAME];
  int host_length = 0;
  MPI_CHECK(MPI_Get_processor_name(host, &host_length));
  const DeviceType& device = job.topology.device_of(ctx.world_rank);
  if (needed > device.memory_gb * 1e9)  // the plan's own promise: what the topology says the device holds
    error = strprintf("rank %d: %s puts %.3f GB of stage state on this rank (pipeline %d, stage %d: parameters, "
                      "gradients, AdamW moments, activations), expected at most the %g GB of its device %s in %s",
                      ctx.world_rank, running->plan.source.c_str(), needed * 1e-9, ctx.role.pipeline, ctx.role.stage,
                      device.memory_gb, device.name.c_str(), job.topology.source.c_str());
  else if (free_bytes > 0 && needed > free_bytes)
    error = strprintf("rank %d on %.*s, %s: %s puts %.2f GiB of stage state on this device (pipeline %d, stage %d), "
                      "expected at most the %.2f GiB free",
                      ctx.world_rank, host_length, host, backend.name().c_str(), running->plan.source.c_str(),
                      needed / 1073741824.0, ctx.role.pipeline, ctx.role.stage, free_bytes / 1073741824.0);
  agree_on_errors(error);
  // Sharded optimizer state needs sums to the shards' owners, which only the MPI reducer does
  // (the same choice on every rank: --shard-optimizer and the plan are job-wide).
  const bool sharded = o.adamw.shard || !running->plan.sharded_blocks.empty();
  ReducerChoice reducer = sharded ? ReducerChoice{make_mpi_reducer(backend), ""} : choose_sum_reducer(backend, ctx.node_of_rank);
  if (!reducer.error.empty()) error = strprintf("rank %d on %.*s: %s", ctx.world_rank, host_length, host, reducer.error.c_str());
  agree_on_errors(error);
  running->runtime = make_rank_runtime(job.model, running->plan, ctx, o.seq_len, o.grad_sync, o.adamw, backend,
                                       std::move(reducer.reducer), seed, previous ? previous->runtime.get() : nullptr);
  return running;
}

void save_parameters(RankRuntime& runtime, const GptConfig& model, const std::string& path, int rank) {
  std::vector<float> full(rank == 0 ? ParamLayout(model, {0, model.num_layers}).size() : 0);
  runtime.gather_parameters(full.data());
  if (rank != 0) return;
  std::ofstream out(path, std::ios::binary);
  if (!out) fail_input(path, "--save-params", "a writable path", "a path that cannot be opened");
  out.write(reinterpret_cast<const char*>(full.data()), static_cast<std::streamsize>(full.size() * sizeof(float)));
}

// Collective: OUTPUT_DIR/checkpoints/step_N.h5, visible only once complete (checkpoint_files.hpp).
void save_checkpoint(RankRuntime& runtime, const TrainOptions& o, const CheckpointHeader& header, int rank,
                     std::ostream& log) {
  const CheckpointFiles files(o.output_dir);
  std::string error;
  try {
    if (rank == 0) files.create();
  } catch (const InputError& e) {
    error = e.what();
  }
  agree_on_errors(error);
  try {
    runtime.save_checkpoint(files.writing_path(header.step), header);
  } catch (const InputError& e) {
    error = e.what();
  }
  agree_on_errors(error);
  MPI_Request closed;  // every rank has closed the file
  MPI_CHECK(MPI_Ibarrier(world_comm(), &closed));
  watched_wait_one(closed, {"the barrier after the checkpoint write", {}});
  try {
    if (rank == 0) files.publish(header.step, o.keep_checkpoints);
  } catch (const InputError& e) {
    error = e.what();
  }
  agree_on_errors(error);
  if (rank == 0) log << "checkpoint " << files.complete_path(header.step) << '\n';
}

// Collective, after step `step`: rank 0 decides whether the split changes (lib/runtime/rebalance.hpp)
// and every rank receives its decision; on a change, every rank starts the new split's runtime,
// moves its parameters and optimizer state into it (its layers are the same) and drops the old.
std::unique_ptr<Running> rebalance(std::unique_ptr<Running> running, Rebalancer& rebalancer, int step,
                                   const Job& job, const TrainOptions& o, kernels::Backend& backend, uint64_t seed,
                                   std::ostream& log, std::optional<MetricsWriter>& metrics, StepTrace& trace) {
  std::optional<RebalanceDecision> decision;
  if (running->ctx.world_rank == 0) decision = rebalancer.decide(running->plan, step);
  const std::string text = broadcast_text(decision ? plan_yaml(decision->plan) : std::string());
  if (text.empty()) return running;
  const double t0 = trace.now_ms();
  Plan next = plan_from_yaml(text, strprintf("%s, re-balanced after step %d", job.plan.source.c_str(), step + 1));
  std::unique_ptr<Running> replaced = start(job, std::move(next), o, backend, seed, running.get());
  if (!decision) return replaced;
  const double rebuild_ms = trace.now_ms() - t0;
  log << strprintf("step %5d | re-balanced: pipeline samples %s -> %s | predicted %.1f -> %.1f ms (%.1f%% faster) | "
                   "switch %.1f ms\n",
                   step + 1, split_text(running->plan).c_str(), split_text(replaced->plan).c_str(), decision->current_ms,
                   decision->predicted_ms, 100 * decision->gain(), rebuild_ms);
  const nlohmann::json event = {{"after_step", step + 1},         {"old", split_json(running->plan)},
                                {"new", split_json(replaced->plan)}, {"predicted_old_ms", decision->current_ms},
                                {"predicted_new_ms", decision->predicted_ms}, {"predicted_gain", decision->gain()},
                                {"switch_ms", rebuild_ms}, {"ms_per_sample", rebalancer.ms_per_sample()}};
  metrics->write({{"step", step + 1}, {"rebalance", event}});
  trace.mark("re-balance", event);
  return replaced;
}

}  // namespace

double train(const TrainOptions& options, kernels::Backend& backend, std::ostream& log) {
  int rank = 0, world = 1;
  MPI_CHECK(MPI_Comm_rank(world_comm(), &rank));
  MPI_CHECK(MPI_Comm_size(world_comm(), &world));
  install_preemption_handlers();
  if (!(options.collective_timeout_s >= 0))  // every rank parsed the same command line
    throw AgreedError(strprintf("--collective-timeout: value: expected seconds >= 0 (0: no watchdog), got %g",
                                options.collective_timeout_s));
  arm_watchdog(options.collective_timeout_s);
  TrainOptions o = options;
  o.resume_path = resolve_resume(options, rank, log);
  std::optional<Job> loaded;
  std::string error;
  try {
    loaded = load_job(o, world);
    if (rank == 0) {
      std::filesystem::create_directories(o.output_dir);
      MetricsWriter probe(o.output_dir + "/metrics.jsonl", loaded->resume.step);
    }
  } catch (const InputError& e) {
    error = e.what();
  }
  agree_on_errors(error);
  Job& job = *loaded;
  arm_fault(o.fault, rank);

  // A resumed run keeps the checkpoint's seed, so that its data order continues.
  const uint64_t seed = job.resume.seed;
  SampleStream train_data(std::move(job.train), o.seq_len, seed, true);
  const bool validate = !job.val.empty();
  SampleStream val_data(std::move(job.val), o.seq_len, seed, false);
  std::unique_ptr<Running> running = start(job, job.plan, o, backend, seed);
  if (!o.resume_path.empty()) {
    try {
      running->runtime->load_checkpoint(o.resume_path);
    } catch (const InputError& e) {
      error = e.what();
    }
    agree_on_errors(error);
  }
  std::optional<MetricsWriter> metrics;
  if (rank == 0) metrics.emplace(o.output_dir + "/metrics.jsonl", job.resume.step);
  LrSchedule schedule = o.lr;
  schedule.total_steps = o.steps;

  if (rank == 0) {
    log << strprintf("model %s: %d layers, %d heads, %d channels; %d rank(s) in %zu pipeline(s); global batch %d x %d tokens\n",
                     job.model.name.c_str(), job.model.num_layers, job.model.num_heads, job.model.channels, world,
                     job.plan.pipelines.size(), job.plan.global_batch, o.seq_len);
    if (o.rebalance.every > 0)
      log << strprintf("re-balancing every %d steps when the predicted gain is at least %.0f%%\n", o.rebalance.every,
                       100 * o.rebalance.threshold);
    log << strprintf("gradient sync: %s, %d collective(s) per step on rank 0; %s\n",
                     grad_sync_name(o.grad_sync), running->runtime->collectives_per_step(),
                     running->runtime->reduction_path().c_str());
  }
  MPI_CHECK(MPI_Barrier(world_comm()));
  StepTrace trace(!o.trace_path.empty());
  const double tokens_per_step = static_cast<double>(job.plan.global_batch) * o.seq_len;
  double loss = 0.0;
  if (rank == 0 && job.resume.step > 0)
    log << strprintf("resumed from %s after step %d%s\n", o.resume_path.c_str(), job.resume.step,
                     job.split_resumed ? strprintf(", with its batch split (pipeline samples %s)", split_text(job.plan).c_str()).c_str() : "");
  Rebalancer rebalancer(o.rebalance, world);
  for (int step = job.resume.step; step < o.steps; step++) {
    set_progress(step + 1, "start of the step");
    fault_truncate_shard(step, o.train_shards.front());
    const float lr = schedule.at(step);
    RankRuntime& runtime = *running->runtime;
    runtime.slow_down(slowdown_factor(o.slowdowns, rank, step));
    const StepResult r = runtime.step(step, train_data, lr, trace);
    if (!r.applied) {
      // Every rank is here: the world sum of the norm is not finite on all of them.
      const std::string blocks = gather_text(r.nonfinite.empty() ? "" : ", " + r.nonfinite);
      throw AgreedError(strprintf("step %d: loss %g, gradient norm %g: not finite%s; the step was not applied",
                                  step + 1, r.loss, r.grad_norm,
                                  blocks.empty() ? "" : (" in the gradient of " + blocks.substr(2)).c_str()));
    }
    loss = r.loss;
    StepTimes mine = trace.step_times();
    mine.peak_device_bytes = static_cast<double>(backend.peak_allocated_bytes());
    const StepReport report = gather_times(mine, running->plan, world);
    if (rank == 0) {
      const double ms = report.ranks[0].step_ms;
      std::string line = strprintf("step %5d/%d | loss %.4f | lr %.2e | grad norm %.3f | %.1f ms | %.0f tok/s",
                                   step + 1, o.steps, loss, lr, r.grad_norm, ms, tokens_per_step / ms * 1e3);
      if (world > 1)
        for (size_t p = 0; p < report.pipelines.size(); p++)
          line += strprintf(" | p%zu %.0f ms %.0f%% bubble", p, report.pipelines[p]["ms"].get<double>(),
                            report.pipelines[p]["bubble_pct"].get<double>());
      log << line << '\n';
      log.flush();
      nlohmann::json ranks = nlohmann::json::array();
      for (size_t k = 0; k < report.ranks.size(); k++) {
        const StepTimes& t = report.ranks[k];
        // What the memory model says the rank allocates, beside what its allocator saw.
        const size_t planned = running->planned_bytes[k];
        ranks.push_back({{"compute_ms", t.compute_ms}, {"device_compute_ms", t.device_compute_ms},
                         {"comm_wait_ms", t.comm_wait_ms}, {"reduce_ms", t.reduce_ms},
                         {"optimizer_ms", t.optimizer_ms}, {"idle_ms", t.idle_ms()},
                         {"peak_bytes", t.peak_device_bytes}, {"planned_bytes", planned}});
      }
      metrics->write({{"step", step + 1}, {"loss", loss}, {"lr", lr}, {"grad_norm", r.grad_norm}, {"ms", ms},
                      {"tokens_per_s", tokens_per_step / ms * 1e3}, {"pipelines", report.pipelines}, {"ranks", ranks}});
      std::vector<double> compute_ms;
      for (const StepTimes& t : report.ranks) compute_ms.push_back(t.device_compute_ms);
      rebalancer.observe(running->plan, compute_ms);
    }
    const bool last = step + 1 == o.steps;
    const int signal = agreed_preemption_signal();
    if (!last && signal == 0 && o.rebalance.every > 0 && (step + 1) % o.rebalance.every == 0)
      running = rebalance(std::move(running), rebalancer, step, job, o, backend, seed, log, metrics, trace);
    if ((o.checkpoint_every > 0 && (last || (step + 1) % o.checkpoint_every == 0)) || signal != 0) {
      set_phase("checkpoint");
      save_checkpoint(*running->runtime, o, {step + 1, job.plan.global_batch, seed, plan_yaml(running->plan)}, rank, log);
    }
    if (signal != 0) {
      if (rank == 0)
        log << strprintf("stopped by signal %d after step %d of %d: checkpoint written; continue with --resume latest\n",
                         signal, step + 1, o.steps);
      return loss;
    }
    if (validate && (last || (o.eval_every > 0 && (step + 1) % o.eval_every == 0))) {
      const double val_loss = running->runtime->evaluate(val_data, o.eval_samples);
      if (rank == 0) {
        log << strprintf("step %5d | val loss %.4f\n", step + 1, val_loss);
        metrics->write({{"step", step + 1}, {"val_loss", val_loss}});
      }
    }
  }
  if (!o.trace_path.empty()) {
    std::vector<std::string> rows;
    for (const RankRole& role : rank_roles(running->plan, world))
      rows.push_back(role.idle() ? strprintf("rank %zu: idle", rows.size())
                                 : strprintf("rank %zu: pipeline %d stage %d", rows.size(), role.pipeline, role.stage));
    trace.write_chrome_trace(o.trace_path, rows);
  }
  if (!o.save_params_path.empty()) save_parameters(*running->runtime, job.model, o.save_params_path, rank);
  return loss;
}

}  // namespace eth

#include "lib/job/trainer.hpp"

#include <mpi.h>

#include <cmath>
#include <memory>
#include <optional>
#include <utility>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/io/metrics.hpp"
#include "lib/job/agreed.hpp"
#include "lib/job/job_outputs.hpp"
#include "lib/job/model_flops.hpp"
#include "lib/job/settings_table.hpp"
#include "lib/job/step_report.hpp"
#include "lib/job/train_samples.hpp"
#include "lib/plan/memory_model.hpp"
#include "lib/runtime/make_rank_runtime.hpp"
#include "lib/runtime/parallel_context.hpp"
#include "lib/runtime/preemption.hpp"
#include "lib/runtime/rebalance.hpp"
#include "lib/runtime/slowdown.hpp"
#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/watchdog.hpp"

namespace eth {
namespace {

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
// from `seed` or taken from `carried` (re-balancing, which also hands over the communicators it
// `kept`: the plan's stages, hence its groups, are the same).
std::unique_ptr<Running> start(const Job& job, Plan plan, kernels::Backend& backend, uint64_t seed,
                               const StageState* carried = nullptr, std::optional<ParallelContext> kept = std::nullopt) {
  const TrainOptions& o = job.options;
  auto running = std::make_unique<Running>();
  running->plan = std::move(plan);
  running->ctx = kept ? with_batch_split(std::move(*kept), running->plan)
                      : build_parallel_context(job.topology, running->plan, job.model, job.precision);
  const ParallelContext& ctx = running->ctx;
  // A plan that does not fit this rank's device, as the topology describes it or as the backend
  // finds it: one line naming rank and device. Elements are as wide as this rank's path stores
  // them (one width in a job); the working copies as many as the backend's arithmetic needs
  // (a CPU standing in for a GPU computes its 16-bit path on the twin).
  const size_t free_bytes = backend.free_memory_bytes();
  running->planned_bytes = plan_device_bytes(
      job.model, running->plan, ctx.world_size, o.seq_len,
      {backend.attention_path(o.seq_len), job.precision.of_rank(job.topology, ctx.world_rank).storage(), o.adamw.shard,
       o.grad_sync == GradSyncMode::block, backend.arithmetic(), backend.ops_device()});
  const size_t needed = running->planned_bytes[ctx.world_rank];
  char host[MPI_MAX_PROCESSOR_NAME];
  int host_length = 0;
  MPI_CHECK(MPI_Get_processor_name(host, &host_length));
  const DeviceType& device = job.topology.device_of(ctx.world_rank);
  // Sharded optimizer state needs sums to the shards' owners, which only the MPI reducer does
  // (the same choice on every rank: --shard-optimizer and the plan are job-wide).
  CommChoice comm = choose_comm_paths(backend, ctx.node_of_rank, job.sharded_optimizer(), o.comm);
  agreed([&] {
    if (!comm.error.empty())
      throw InputError(strprintf("rank %d on %.*s: %s", ctx.world_rank, host_length, host, comm.error.c_str()));
  });
  // NCCL's own buffers, which its communicators take from the device beside the stage's state.
  const int communicators = comm.transfer_streams ? stream_communicators(ctx) : 0;
  const size_t nccl_bytes = communicators * comm.communicator_bytes_estimate;
  agreed([&] {
    if (needed > device.memory_gb * 1e9)  // the plan's own promise: what the topology says the device holds
      throw InputError(strprintf("rank %d: %s puts %.3f GB of stage state on this rank (pipeline %d, stage %d: parameters, "
                                 "gradients, AdamW moments, activations), expected at most the %g GB of its device %s in %s",
                                 ctx.world_rank, running->plan.source.c_str(), needed * 1e-9, ctx.role.pipeline, ctx.role.stage,
                                 device.memory_gb, device.name.c_str(), job.topology.source.c_str()));
    if (free_bytes > 0 && needed + nccl_bytes > free_bytes)
      throw InputError(strprintf("rank %d on %.*s, %s: %s puts %.2f GiB of stage state on this device (pipeline %d, stage %d)"
                                 "%s, expected at most the %.2f GiB free",
                                 ctx.world_rank, host_length, host, backend.name().c_str(), running->plan.source.c_str(),
                                 (needed + nccl_bytes) / 1073741824.0, ctx.role.pipeline, ctx.role.stage,
                                 nccl_bytes == 0 ? ""
                                                 : strprintf(" with the buffers of %d NCCL communicators (%.2f GiB, estimated)",
                                                             communicators, nccl_bytes / 1073741824.0).c_str(),
                                 free_bytes / 1073741824.0));
  });
  running->runtime = make_rank_runtime(job.model, running->plan, ctx, o.seq_len, o.grad_sync, o.adamw, backend,
                                       std::move(comm), seed, carried);
  return running;
}

// Whether a periodic event falls after step `step` (0-based): every `every` steps, 0: never.
bool due(int every, int step) { return every > 0 && (step + 1) % every == 0; }

// The training loop and what it carries from step to step. Every method is collective unless it
// says it is rank 0's.
struct Training {
  const Job& job;
  const TrainOptions& o;
  kernels::Backend& backend;
  std::ostream& log;
  const int rank, world;
  const uint64_t seed;  // a resumed run keeps the checkpoint's, so that its data order continues
  SampleStream& train_data;
  SampleStream& val_data;
  std::unique_ptr<Running> running;
  std::optional<MetricsWriter>& metrics;  // rank 0's
  StepTrace& trace;
  TrainSamples& samples;
  LrSchedule schedule;
  Rebalancer rebalancer;
  StepRates rates;
  LossScale loss_scale;  // the same on every rank (lib/model/loss_scale.hpp)
  bool saturation_reported = false;  // rank 0: the first step whose activations saturated has been logged

  double run() {
    double loss = 0.0;
    rates.start(job.resume.step);
    for (int step = job.resume.step; step < o.steps; step++) {
      const float lr = schedule.at(step);
      const StepResult r = take_step(step, lr);
      loss = r.loss;
      report(step, r, lr);
      const bool last = step + 1 == o.steps;
      const int signal = agreed_preemption_signal();  // SIGUSR1 or SIGTERM on any rank
      if (!last && signal == 0 && due(o.rebalance.every, step)) rebalance(step);
      if (signal != 0 || (o.checkpoint_every > 0 && (last || due(o.checkpoint_every, step)))) checkpoint(step);
      if (signal != 0) return stop(signal, step, loss);
      if (!o.val_shards.empty() && (last || due(o.eval_every, step))) evaluate(step);
      if (samples.due(step)) samples.sample(step, *running->runtime, backend, log, metrics);
    }
    finish();
    return loss;
  }

  // One optimizer step. A non-finite loss or norm, which every rank sees alike (it is a world
  // sum), ends the job on every rank before the update; with dynamic loss scaling (fp16) it is
  // an overflow instead: the step is skipped on every rank and the scale halved, and only a
  // scale fallen below its floor ends the job.
  StepResult take_step(int step, float lr) {
    set_progress(step + 1, "start of the step");
    fault_truncate_shard(step, o.train_shards.front());
    RankRuntime& runtime = *running->runtime;
    runtime.slow_down(slowdown_factor(o.slowdowns, rank, step));
    const double scale = loss_scale.value();
    if (loss_scale.overflow_would_end()) runtime.check_own_gradients_next_step();
    const StepResult r = runtime.step(step, train_data, lr, static_cast<float>(scale), trace);
    if (r.applied) {
      loss_scale.after_step(false);
      return r;
    }
    const std::string blocks = gather_text(r.nonfinite.empty() ? "" : ", " + r.nonfinite);
    const std::string where = blocks.empty() ? "" : " in the gradient of " + blocks.substr(2);
    if (!loss_scale.dynamic())
      throw AgreedError(strprintf("step %d: loss %g, gradient norm %g: not finite%s; the step was not applied",
                                  step + 1, r.loss, r.grad_norm, where.c_str()));
    // The block sums spread an overflow to every holder of the block: the blocks say where.
    const std::string who = where.empty() ? " in the loss" : where;
    if (!loss_scale.after_step(true)) {
      // The ranks whose own gradients overflowed, checked before the sums in this step (an
      // overflow reaches the stages before it in its pipeline too, through activation gradients).
      const std::string ranks = gather_text(r.own_overflow ? strprintf(", %d", rank) : "");
      const std::string origin = ranks.empty() ? "no rank's own gradients: the loss"
                                 : ranks.find(',', 2) == std::string::npos ? "rank " + ranks.substr(2)
                                                                           : "ranks " + ranks.substr(2);
      throw AgreedError(strprintf("step %d: the gradients overflowed at loss scale %g%s, on %s; halving the scale "
                                  "would fall below its floor %g: every step overflows; the step was not applied, "
                                  "the last checkpoint is as it was",
                                  step + 1, scale, who.c_str(), origin.c_str(), loss_scale.config().floor));
    }
    if (rank == 0)
      log << strprintf("step %5d/%d | overflow at loss scale %g%s: skipped on every rank, loss scale now %g\n",
                       step + 1, o.steps, scale, who.c_str(), loss_scale.value());
    return r;
  }

  // Every rank's times to rank 0, which reports the step.
  void report(int step, const StepResult& r, float lr) {
    StepTimes mine = trace.step_times();
    mine.peak_device_bytes = static_cast<double>(backend.peak_allocated_bytes());
    const StepReport times = gather_times(mine, running->plan, world);
    if (rank == 0) report_on_rank0(step, r, lr, times);
  }

  // Rank 0: the step's line and metrics record; the measured compute to the re-balancer.
  void report_on_rank0(int step, const StepResult& r, float lr, const StepReport& report) {
    const double ms = report.ranks[0].step_ms;
    const StepRates::Rates rate = rates.after(step + 1, o.steps, ms);
    std::string line = strprintf("step %5d/%d | loss %.4f | lr %.2e | grad norm %.3f | %.1f ms | %.0f tok/s", step + 1,
                                 o.steps, r.loss, lr, r.grad_norm, ms, rate.tokens_per_s);
    if (loss_scale.dynamic())
      line += strprintf(" | loss scale %g%s", loss_scale.value(), r.applied ? "" : " (step skipped)");
    if (rate.mfu >= 0) line += strprintf(" | mfu %.1f%%", 100 * rate.mfu);
    line += strprintf(" | eta %s", duration_text(rate.eta_s).c_str());
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
                       {"peak_bytes", t.peak_device_bytes}, {"planned_bytes", planned},
                       {"stage_bytes_sent", t.stage_bytes_sent}});
    }
    nlohmann::json record = {{"step", step + 1}, {"loss", r.loss}, {"lr", lr}, {"grad_norm", r.grad_norm}, {"ms", ms},
                             {"tokens_per_s", rate.tokens_per_s}, {"eta_s", rate.eta_s},
                             {"pipelines", report.pipelines}, {"ranks", ranks}};
    if (rate.mfu >= 0) record["mfu"] = rate.mfu;
    report_saturated(step, r.saturated, record);
    if (loss_scale.dynamic()) {  // the scale for the next step, after this one's outcome
      record["loss_scale"] = loss_scale.value();
      record["skipped"] = !r.applied;
      record["skipped_steps"] = loss_scale.state().skipped;
    }
    metrics->write(record);
    std::vector<double> compute_ms;
    for (const StepTimes& t : report.ranks) compute_ms.push_back(t.device_compute_ms);
    if (o.modelled_compute_ms > 0)
      compute_ms = modelled_compute_ms(o.slowdowns, samples_per_step(running->plan, world), step, o.modelled_compute_ms);
    rebalancer.observe(running->plan, compute_ms);
  }

  // After step `step`: rank 0 decides whether the split changes (lib/runtime/rebalance.hpp) and
  // every rank receives its decision; on a change, every rank copies its parameters and optimizer
  // state to the host, frees the old runtime, and starts the new split's runtime from that state
  // (its layers are the same) with the same communicators: a switch never holds two runtimes'
  // device memory at once, so a rank using most of its device can still switch.
  void rebalance(int step) {
    std::optional<RebalanceDecision> decision;
    if (rank == 0) decision = rebalancer.decide(running->plan, step);
    const std::string text = broadcast_text(decision ? plan_yaml(decision->plan) : std::string());
    if (text.empty()) return;
    const double t0 = trace.now_ms();
    Plan next = plan_from_yaml(text, strprintf("%s, re-balanced after step %d", job.plan.source.c_str(), step + 1));
    std::unique_ptr<Running> old = std::move(running);
    const StageState state = old->runtime->release_state();
    old->runtime.reset();
    running = start(job, std::move(next), backend, seed, &state, std::move(old->ctx));
    if (!decision) return;
    const double rebuild_ms = trace.now_ms() - t0;
    log << strprintf("step %5d | re-balanced: pipeline samples %s -> %s | predicted %.1f -> %.1f ms (%.1f%% faster) | "
                     "switch %.1f ms\n",
                     step + 1, split_text(old->plan).c_str(), split_text(running->plan).c_str(), decision->current_ms,
                     decision->predicted_ms, 100 * decision->gain(), rebuild_ms);
    const nlohmann::json event = {{"after_step", step + 1},         {"old", split_json(old->plan)},
                                  {"new", split_json(running->plan)}, {"predicted_old_ms", decision->current_ms},
                                  {"predicted_new_ms", decision->predicted_ms}, {"predicted_gain", decision->gain()},
                                  {"switch_ms", rebuild_ms}, {"ms_per_sample", rebalancer.ms_per_sample()}};
    metrics->write({{"step", step + 1}, {"rebalance", event}});
    trace.mark("re-balance", event);
  }

  void checkpoint(int step) {
    set_phase("checkpoint");
    CheckpointHeader header{step + 1, job.plan.global_batch, seed, plan_yaml(running->plan), std::nullopt};
    if (loss_scale.dynamic()) header.loss_scale = loss_scale.state();
    save_checkpoint(*running->runtime, o.output_dir, o.keep_checkpoints, header, rank, log);
  }

  // After step `step`: its record in metrics.jsonl counts the evaluation's saturations.
  void evaluate(int step) {
    const Evaluation e = running->runtime->evaluate(val_data, o.eval_samples);
    if (rank == 0) {
      log << strprintf("step %5d | val loss %.4f\n", step + 1, e.loss);
      nlohmann::json record = {{"step", step + 1}, {"val_loss", e.loss}};
      report_saturated(step, e.saturated, record);
      metrics->write(record);
    }
  }

  // Rank 0, in a job mixing bf16 and fp16 stages: the activation values that saturated in step
  // `step` (its training or its evaluation) into its `record`, and a log line the first time.
  void report_saturated(int step, double saturated, nlohmann::json& record) {
    if (!job.precision.mixes_formats()) return;
    record["saturated"] = saturated;
    if (saturated > 0 && !saturation_reported) {
      log << strprintf("step %5d | %.0f activation values past fp16's range (65504) saturated on arrival from bf16 "
                       "stages at fp16 stages; each step's count is in metrics.jsonl (\"saturated\")\n",
                       step + 1, saturated);
      saturation_reported = true;
    }
  }

  // Preempted after step `step`: its checkpoint is written.
  double stop(int signal, int step, double loss) {
    if (rank == 0)
      log << strprintf("stopped by signal %d after step %d of %d: checkpoint written; continue with --resume latest\n",
                       signal, step + 1, o.steps);
    return loss;
  }

  // After the last step: the trace and the final parameters.
  void finish() {
    if (!o.trace_path.empty()) write_trace(trace, running->plan, world, o.trace_path);
    if (!o.save_params_path.empty()) save_parameters(*running->runtime, job.model, o.save_params_path, rank);
  }

  // "1h02m", "3m07s", "42s": the time left, as a person reads it.
  static std::string duration_text(double s) {
    const long t = std::lround(s);
    if (t >= 3600) return strprintf("%ldh%02ldm", t / 3600, t / 60 % 60);
    if (t >= 60) return strprintf("%ldm%02lds", t / 60, t % 60);
    return strprintf("%lds", t);
  }
};

}  // namespace

double train(Job& job, kernels::Backend& backend, std::ostream& log) {
  const TrainOptions& o = job.options;
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(world_comm(), &rank));
  arm_fault(o.fault, rank);
  const uint64_t seed = job.resume.seed;
  SampleStream train_data(std::move(job.train), o.seq_len, seed, true);
  SampleStream val_data(std::move(job.val), o.seq_len, seed, false);
  std::unique_ptr<Running> running = start(job, job.plan, backend, seed);
  if (!o.resume_path.empty()) agreed([&] { running->runtime->load_checkpoint(o.resume_path); });
  std::optional<MetricsWriter> metrics;
  // Every rank's precision path, for the table (collective).
  std::vector<std::string> precision_paths;
  for (std::string all = gather_text(backend.precision_path() + '\n'); !all.empty();) {
    const size_t end = all.find('\n');
    precision_paths.push_back(all.substr(0, end));
    all.erase(0, end + 1);
  }
  if (rank == 0) {
    metrics.emplace(o.output_dir + "/metrics.jsonl", job.resume.step);
    print_settings(job, *running->runtime, backend, precision_paths, log);
  }
  draw_plan(job, rank, log);
  if (rank == 0) {
    if (job.resume.step > 0)
      log << strprintf("resumed from %s after step %d%s\n", o.resume_path.c_str(), job.resume.step,
                       job.split_resumed ? strprintf(", with its batch split (pipeline samples %s)", split_text(job.plan).c_str()).c_str() : "");
  }
  MPI_CHECK(MPI_Barrier(world_comm()));
  StepTrace trace(!o.trace_path.empty());
  LrSchedule schedule = o.lr;
  schedule.total_steps = o.steps;
  const double tokens_per_step = static_cast<double>(job.plan.global_batch) * o.seq_len;
  TrainSamples samples(o, job.model, rank);
  // A resumed run of a job with loss scaling goes on with the checkpoint's scale, if it had one.
  LossScale loss_scale(o.loss_scale);
  if (loss_scale.dynamic() && job.resume.loss_scale) loss_scale.restore(*job.resume.loss_scale);
  Training training{job, o, backend, log, rank, job.world_size, seed, train_data, val_data, std::move(running), metrics, trace,
                    samples, schedule, Rebalancer(o.rebalance, job.world_size),
                    StepRates(tokens_per_step, tokens_per_step * training_flops_per_token(job.model, o.seq_len),
                              peak_flops(job.topology, job.precision)),
                    loss_scale};
  return training.run();
}

}  // namespace eth

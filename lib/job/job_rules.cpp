#include "lib/job/job_rules.hpp"

#include <algorithm>
#include <cmath>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/io/gpt2_bpe.hpp"
#include "lib/plan/grad_blocks.hpp"
#include "lib/plan/plan_validation.hpp"

namespace eth {
namespace {

// --inject-fault against this job: a rank, step and phase it has.
void check_fault_options(const FaultSpec& f, const TrainOptions& o, int world_size) {
  if (f.rank >= world_size)
    fail_input("--inject-fault", "rank", strprintf("a rank below %d, the ranks of this job", world_size), std::to_string(f.rank));
  if (f.step > o.steps)
    fail_input("--inject-fault", "step", strprintf("a step of this run, 1 to --steps %d", o.steps), std::to_string(f.step));
  if (f.phase == FaultPhase::checkpoint && !(o.checkpoint_every > 0 && (f.step % o.checkpoint_every == 0 || f.step == o.steps)))
    fail_input("--inject-fault", "step", "a step after which a checkpoint is written (--checkpoint-every)", std::to_string(f.step));
}

// --inject-fault nan: a gradient block the rank holds.
void check_fault_block(const FaultSpec& f, const Job& job) {
  const std::vector<GradBlock> blocks = derive_grad_blocks(job.plan, job.model.num_layers);
  std::string held;
  for (size_t b = 0; b < blocks.size(); b++)
    if (std::count(blocks[b].owners.begin(), blocks[b].owners.end(), f.rank)) held += (held.empty() ? "" : ", ") + std::to_string(b);
  if (f.block >= static_cast<int>(blocks.size()) || !std::count(blocks[f.block].owners.begin(), blocks[f.block].owners.end(), f.rank))
    fail_input("--inject-fault", "block", strprintf("a gradient block rank %d holds (%s, of blocks 0 to %zu of %s)", f.rank,
                                                    held.empty() ? "none" : held.c_str(), blocks.size() - 1, job.plan.source.c_str()),
               std::to_string(f.block));
}

// --inject-fault lose-micro-batch: a rank whose pipeline runs at least two micro-batches.
void check_fault_micro_batches(const FaultSpec& f, const Job& job) {
  const RankRole role = rank_roles(job.plan, job.world_size)[static_cast<size_t>(f.rank)];
  const int micro_batches = role.idle() ? 0 : job.plan.pipelines[static_cast<size_t>(role.pipeline)].micro_batches;
  if (micro_batches < 2)
    fail_input("--inject-fault", "rank",
               strprintf("a rank whose pipeline runs two micro-batches or more (rank %d runs %d in %s)", f.rank,
                         micro_batches, job.plan.source.c_str()),
               std::to_string(f.rank));
}

}  // namespace

void check_options(const TrainOptions& o, int world_size) {
  if (!(o.collective_timeout_s >= 0))
    fail_input("--collective-timeout", "value", "seconds >= 0 (0: no watchdog)", strprintf("%g", o.collective_timeout_s));
  if (o.steps <= 0) fail_input("--steps", "value", "a positive step count", std::to_string(o.steps));
  if (o.lr.warmup_steps < 0) fail_input("--warmup", "value", "a non-negative step count", std::to_string(o.lr.warmup_steps));
  if (!(o.loss_scale.initial >= o.loss_scale.floor && std::isfinite(o.loss_scale.initial)))
    fail_input("--loss-scale", "value", strprintf("a finite scale >= %g", o.loss_scale.floor),
               strprintf("%g", o.loss_scale.initial));
  if (o.loss_scale.window <= 0)
    fail_input("--loss-scale-window", "value", "a positive step count", std::to_string(o.loss_scale.window));
  if (o.train_shards.empty()) fail_input("--train-data", "value", "at least one token shard", "none");
  if (o.plan_path.empty() != o.topology_path.empty())
    fail_input(o.plan_path.empty() ? "--plan" : "--topology", "value", "given together with " +
               std::string(o.plan_path.empty() ? "--topology" : "--plan"), "nothing");
  if (o.plan_path.empty() && world_size == 1) {  // --batch and --micro-batch make the plan
    if (o.micro_batch <= 0) fail_input("--micro-batch", "value", "a positive sample count", std::to_string(o.micro_batch));
    if (o.global_batch <= 0 || o.global_batch % o.micro_batch != 0)
      fail_input("--batch", "value", "a positive multiple of --micro-batch (" + std::to_string(o.micro_batch) + ")",
                 std::to_string(o.global_batch));
  }
  if (o.checkpoint_every < 0)
    fail_input("--checkpoint-every", "value", "0 (no checkpoints) or a positive step count", std::to_string(o.checkpoint_every));
  if (o.keep_checkpoints < 0)
    fail_input("--keep-checkpoints", "value", "0 (keep all) or a positive count", std::to_string(o.keep_checkpoints));
  if (o.sample_every < 0)
    fail_input("--sample-every", "value", "0 (no samples) or a positive step count", std::to_string(o.sample_every));
  if (o.sample_every > 0 && o.sample_tokens <= 0)
    fail_input("--sample-tokens", "value", "a positive token count", std::to_string(o.sample_tokens));
  if (o.sample_every == 0 && !o.sample_prompt.empty())
    fail_input("--sample-prompt", "value", "given with --sample-every N", "--sample-every 0");
  if (o.rebalance.every < 0)
    fail_input("--rebalance-every", "value", "0 (no re-balancing) or a positive step count", std::to_string(o.rebalance.every));
  if (!(o.rebalance.threshold >= 0 && o.rebalance.threshold < 1))
    fail_input("--rebalance-threshold", "value", "a fraction of the step time in [0, 1)", strprintf("%g", o.rebalance.threshold));
  if (o.fault) check_fault_options(*o.fault, o, world_size);
  for (const SlowdownRule& r : o.slowdowns)
    if (r.rank >= world_size)
      fail_input("--slowdown", "value", strprintf("a rank below %d, the ranks of this job", world_size), std::to_string(r.rank));
  if (!(o.modelled_compute_ms >= 0))
    fail_input("--modelled-compute-ms", "value", "milliseconds per sample > 0, or 0 (measured)",
               strprintf("%g", o.modelled_compute_ms));
}

void check_against_model(const TrainOptions& o, const ModelConfig& model) {
  if (o.seq_len <= 0 || o.seq_len > model.max_seq_len)
    fail_input("--seq-len", "value", "1 to max_seq_len = " + std::to_string(model.max_seq_len) + " of " + o.model_path,
               std::to_string(o.seq_len));
  // An empty prompt starts from <|endoftext|>, a token of GPT-2's vocabulary only.
  if (o.sample_every > 0 && o.sample_prompt.empty() && model.vocab_size <= kEndOfText)
    fail_input("--sample-prompt", "value",
               strprintf("a prompt: %s's vocab_size %d has no <|endoftext|> (%d) to start from", o.model_path.c_str(),
                         model.vocab_size, kEndOfText),
               "none");
}

void check_job(const Job& job) {
  const TrainOptions& o = job.options;
  if (job.topology.world_size() != job.world_size)
    fail_input(job.topology.source, "nodes", strprintf("devices for the %d ranks of this job", job.world_size),
               strprintf("%d devices", job.topology.world_size()));
  validate_plan(job.plan, job.topology, job.model);
  // Sums to the shards' owners exist in block mode only.
  if (job.sharded_optimizer() && o.grad_sync != GradSyncMode::block)
    fail_input(o.adamw.shard ? "--shard-optimizer" : job.plan.source, o.adamw.shard ? "value" : "sharded_blocks",
               "--grad-sync block (the baselines sum whole slices)", std::string("--grad-sync ") + grad_sync_name(o.grad_sync));
  if (o.fault && (o.fault->kind == FaultKind::nan || o.fault->kind == FaultKind::overflow))
    check_fault_block(*o.fault, job);
  if (o.fault && o.fault->kind == FaultKind::lose_micro_batch) check_fault_micro_batches(*o.fault, job);
  if (o.resume_path.empty()) return;
  if (job.resume.step >= o.steps)
    fail_input("--steps", "value", strprintf("more than the %d steps %s has taken", job.resume.step, o.resume_path.c_str()),
               std::to_string(o.steps));
  // The sample stream, the learning-rate schedule and the data order are functions of the step
  // and the global batch: another batch would skip or repeat samples. Refused, not guessed.
  if (job.resume.step > 0 && job.resume.global_batch != job.plan.global_batch)
    fail_input(o.resume_path, "global_batch",
               strprintf("%d, the global batch of this run (--batch or the plan's global_batch): resume with the "
                         "checkpoint's global batch",
                         job.plan.global_batch),
               std::to_string(job.resume.global_batch));
}

}  // namespace eth

#include "lib/job/settings_table.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/twin_backend.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/job/model_flops.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/runtime/rebalance.hpp"
#include "mpi_topology/wire_buffer.hpp"

namespace eth {
namespace {

// "4 x A100-80GB (80 GB; bf16 at 312 TFLOP/s), 4 x V100-32GB (32 GB; bf16 in fp32 arithmetic at
// 15.7 TFLOP/s)": each device type's path and its peak, in the order of the topology.
std::string devices_text(const Topology& t, const PrecisionPaths& paths) {
  std::vector<int> count(t.device_types.size(), 0);
  for (int r = 0; r < t.world_size(); r++) count[static_cast<size_t>(t.ranks[r].device_type)]++;
  std::string text;
  for (size_t d = 0; d < count.size(); d++)
    if (count[d] > 0)
      text += strprintf("%s%d x %s (%g GB; %s at %g TFLOP/s)", text.empty() ? "" : ", ", count[d],
                        t.device_types[d].name.c_str(), t.device_types[d].memory_gb, paths.by_type[d].name().c_str(),
                        paths.by_type[d].peak_tflops);
  return text;
}

// The testing options in effect: "--slowdown 1:8:1 --inject-fault at rank 2, step 5", or "none".
std::string testing_text(const TrainOptions& o) {
  std::string text;
  for (const SlowdownRule& r : o.slowdowns) text += strprintf(" --slowdown %d:%g:%d", r.rank, r.factor, r.from_step);
  if (o.modelled_compute_ms > 0) text += strprintf(" --modelled-compute-ms %g", o.modelled_compute_ms);
  if (o.fault) text += strprintf(" --inject-fault at rank %d, step %d", o.fault->rank, o.fault->step);
  return text.empty() ? "none" : text.substr(1);
}

std::string plan_text(const Job& job) {
  std::string text = strprintf("%s: %s, %zu pipeline(s), pipeline samples %s", plan_source_name(job.plan_source),
                               job.plan.source.c_str(), job.plan.pipelines.size(), split_text(job.plan).c_str());
  if (job.split_resumed) text += ", batch split from the checkpoint";
  return text;
}

// One path for every rank, or each path with the ranks that take it, in rank order; and where
// ranks run the bf16 kernels but the model's head size is not one the flash attention takes,
// that attention computes in fp32 there.
std::string precision_text(const std::vector<std::string>& paths, const ModelConfig& model) {
  std::vector<std::pair<std::string, std::string>> groups;  // path, its ranks
  for (size_t r = 0; r < paths.size(); r++) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == paths[r]; });
    if (it == groups.end()) it = groups.insert(groups.end(), {paths[r], ""});
    it->second += (it->second.empty() ? "" : ", ") + std::to_string(r);
  }
  const int head_size = model.channels / model.num_heads;
  const bool kernels = std::any_of(paths.begin(), paths.end(),
                                   [](const std::string& p) { return p.rfind("bf16 (bf16 kernels", 0) == 0; });
  const std::string attention = kernels && !kernels::flash_attention_head_size(head_size)
                                    ? strprintf("; this model's head size %d: attention in fp32 on the bf16 bytes", head_size)
                                    : "";
  if (groups.size() == 1) return groups.front().first + attention;
  std::string text;
  for (const auto& [path, ranks] : groups)
    text += (text.empty() ? "" : "; ") + std::string(ranks.find(',') == std::string::npos ? "rank " : "ranks ") + ranks +
            ": " + path;
  return text + attention;
}

}  // namespace

void print_settings(const Job& job, const RankRuntime& runtime, const kernels::Backend& backend,
                    const std::vector<std::string>& precision_paths, std::ostream& log) {
  const TrainOptions& o = job.options;
  const ModelConfig& m = job.model;
  const double parameters = static_cast<double>(ParamLayout(m, {0, m.num_layers}).size());
  const auto every = [](int n, const char* none) { return n > 0 ? strprintf("every %d steps and after the last", n) : std::string(none); };
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"model", strprintf("%s (%s): %d layers, %d heads, %d channels, vocab %d (padded %d), %.2fM parameters",
                          m.name.c_str(), o.model_path.c_str(), m.num_layers, m.num_heads, m.channels, m.vocab_size,
                          m.padded_vocab_size, parameters * 1e-6)},
      {"plan", plan_text(job)},
      {"topology", job.topology.source},
      {"ranks", strprintf("%d (%zu idle) on %zu node(s)", job.world_size, job.plan.idle.size(), job.topology.nodes.size())},
      {"devices", devices_text(job.topology, job.precision)},
      {"backend", backend.name()},
      {"MPI buffers", mpi_buffer_paths(backend, o.comm)},
      {"precision", precision_text(precision_paths, m)},
      {"peak", strprintf("%.3f TFLOP/s, all ranks at their path's peak (MFU's); %.3g GFLOP per token",
                         peak_flops(job.topology, job.precision) * 1e-12,
                         training_flops_per_token(m, o.seq_len) * 1e-9)},
      {"batch", strprintf("%d samples x %d tokens = %d tokens per step", job.plan.global_batch, o.seq_len,
                          job.plan.global_batch * o.seq_len)},
      {"seq len", std::to_string(o.seq_len)},
      {"steps", job.resume.step > 0 ? strprintf("%d to %d", job.resume.step + 1, o.steps) : strprintf("1 to %d", o.steps)},
      {"lr schedule", strprintf("%g, %d warm-up steps, cosine to %g at step %d", o.lr.peak, o.lr.warmup_steps, o.lr.floor, o.steps)},
      {"AdamW", strprintf("betas %g, %g, eps %g, weight decay %g, grad clip %g", o.adamw.beta1, o.adamw.beta2, o.adamw.eps,
                          o.adamw.weight_decay, o.adamw.max_grad_norm)},
      {"loss scale", o.loss_scale.dynamic
                         ? strprintf("dynamic (fp16 ranks): %g, x2 after %d clean steps, /2 and the step skipped on "
                                     "every rank at an overflow, floor %g",
                                     job.resume.loss_scale ? job.resume.loss_scale->scale : o.loss_scale.initial,
                                     o.loss_scale.window, o.loss_scale.floor)
                         : "none (no fp16 rank)"},
      {"seed", std::to_string(job.resume.seed)},
      {"gradient sync", strprintf("%s, %d collective(s) per step on rank 0; %s", grad_sync_name(o.grad_sync),
                                  runtime.collectives_per_step(), runtime.reduction_path().c_str())},
      {"re-balancing", o.rebalance.every > 0 ? strprintf("every %d steps when the predicted gain is at least %.0f%%",
                                                         o.rebalance.every, 100 * o.rebalance.threshold)
                                             : "off"},
      {"watchdog", o.collective_timeout_s > 0 ? strprintf("%g s", o.collective_timeout_s) : "off"},
      {"train data", strprintf("%zu shard(s), first %s", o.train_shards.size(), o.train_shards.front().c_str())},
      {"evaluation", o.val_shards.empty() ? "none (no --val-data)"
                                          : strprintf("%d windows, %s", o.eval_samples, every(o.eval_every, "after the last step").c_str())},
      {"checkpoints", strprintf("%s, keep %s", every(o.checkpoint_every, "none").c_str(),
                                o.keep_checkpoints > 0 ? std::to_string(o.keep_checkpoints).c_str() : "all")},
      {"resume", o.resume_path.empty() ? "no" : o.resume_path},
      {"metrics", o.output_dir + "/metrics.jsonl"},
      {"trace", o.trace_path.empty() ? "none" : o.trace_path},
      {"save params", o.save_params_path.empty() ? "none" : o.save_params_path},
      {"testing", testing_text(o)},
  };
  const std::string rule = "+-----------------+" + std::string(60, '-') + "+\n";
  log << rule << strprintf("| %-15s | %-58s |\n", "setting", "value") << rule;
  for (const auto& [name, value] : rows) log << strprintf("| %-15s | %-58s |\n", name.c_str(), value.c_str());
  log << rule;
}

}  // namespace eth

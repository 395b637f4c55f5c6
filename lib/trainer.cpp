#include "lib/trainer.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "lib/input_error.hpp"
#include "lib/metrics.hpp"
#include "lib/model_config.hpp"
#include "lib/stage.hpp"
#include "lib/strprintf.hpp"
#include "lib/token_data.hpp"

namespace eth {
namespace {

void validate_options(const TrainOptions& o, const GptConfig& model) {
  if (o.micro_batch <= 0) fail_input("--micro-batch", "value", "a positive sample count", std::to_string(o.micro_batch));
  if (o.global_batch <= 0 || o.global_batch % o.micro_batch != 0)
    fail_input("--batch", "value", "a positive multiple of --micro-batch (" + std::to_string(o.micro_batch) + ")",
               std::to_string(o.global_batch));
  if (o.seq_len <= 0 || o.seq_len > model.max_seq_len)
    fail_input("--seq-len", "value", "1 to max_seq_len = " + std::to_string(model.max_seq_len) + " of " + o.model_path,
               std::to_string(o.seq_len));
  if (o.steps <= 0) fail_input("--steps", "value", "a positive step count", std::to_string(o.steps));
  if (o.train_shards.empty()) fail_input("--train-data", "value", "at least one token shard", "none");
  if (o.lr.warmup_steps < 0) fail_input("--warmup", "value", "a non-negative step count", std::to_string(o.lr.warmup_steps));
}

std::vector<TokenShard> load_shards(const std::vector<std::string>& paths, int vocab_size) {
  std::vector<TokenShard> shards;
  for (const std::string& p : paths) shards.push_back(load_token_shard(p, vocab_size));
  return shards;
}

// Fills (B, T) inputs and targets with samples first, first + 1, ... of the stream.
void fetch_batch(SampleStream& stream, uint64_t first, int B, int T, std::vector<int32_t>& inputs,
                 std::vector<int32_t>& targets) {
  for (int b = 0; b < B; b++)
    stream.sample(first + static_cast<uint64_t>(b), inputs.data() + static_cast<size_t>(b) * T,
                  targets.data() + static_cast<size_t>(b) * T);
}

double mean_validation_loss(Stage& stage, SampleStream& val, int batches) {
  const int B = stage.micro_batch(), T = stage.seq_len();
  std::vector<int32_t> inputs(static_cast<size_t>(B) * T), targets(inputs.size());
  double sum = 0.0;
  for (int i = 0; i < batches; i++) {
    fetch_batch(val, static_cast<uint64_t>(i) * B, B, T, inputs, targets);
    stage.forward(0, inputs.data(), nullptr);
    sum += stage.loss(0, targets.data(), false);
  }
  return sum / (static_cast<double>(batches) * B);
}

}  // namespace

double train_single_rank(const TrainOptions& options, kernels::Backend& backend, std::ostream& log) {
  const GptConfig model = load_model_config(options.model_path);
  validate_options(options, model);
  const int B = options.micro_batch, T = options.seq_len;
  const int micro_batches = options.global_batch / B;

  SampleStream train(load_shards(options.train_shards, model.vocab_size), T, options.seed, true);
  std::vector<TokenShard> val_shards = load_shards(options.val_shards, model.vocab_size);
  const bool validate = !val_shards.empty();
  SampleStream val(std::move(val_shards), T, options.seed, false);

  std::filesystem::create_directories(options.output_dir);
  MetricsWriter metrics(options.output_dir + "/metrics.jsonl");

  Stage stage(model, LayerRange{0, model.num_layers}, B, T, 1, backend);
  {
    std::vector<float> host(stage.layout().size());
    init_gpt2_parameters(model, stage.layout(), options.seed, host.data());
    backend.copy_to_device(stage.params(), host.data(), host.size() * sizeof(float));
  }
  AdamW optimizer(stage.layout(), options.adamw, backend);
  LrSchedule schedule = options.lr;
  schedule.total_steps = options.steps;

  log << strprintf("model %s: %d layers, %d heads, %d channels, %.2f M parameters\n", model.name.c_str(),
                   model.num_layers, model.num_heads, model.channels, stage.layout().size() / 1e6);
  log << strprintf("batch %d = %d micro-batches of %d samples x %d tokens; %llu training windows\n",
                   options.global_batch, micro_batches, B, T, static_cast<unsigned long long>(train.windows()));

  std::vector<int32_t> inputs(static_cast<size_t>(B) * T), targets(inputs.size());
  const double tokens_per_step = static_cast<double>(options.global_batch) * T;
  double loss = 0.0;
  for (int step = 0; step < options.steps; step++) {
    const auto start = std::chrono::steady_clock::now();
    stage.zero_grads();
    double loss_sum = 0.0;
    for (int mb = 0; mb < micro_batches; mb++) {
      const uint64_t first = static_cast<uint64_t>(step) * options.global_batch + static_cast<uint64_t>(mb) * B;
      fetch_batch(train, first, B, T, inputs, targets);
      stage.forward(0, inputs.data(), nullptr);
      loss_sum += stage.loss(0, targets.data(), true);
      stage.backward(0, nullptr);
    }
    loss = loss_sum / options.global_batch;
    // Gradients are sums over samples: the mean gradient's norm is theirs over the batch.
    const double grad_norm = std::sqrt(backend.sum_of_squares(stage.grads(), stage.layout().size())) /
                             options.global_batch;
    if (!std::isfinite(loss) || !std::isfinite(grad_norm)) {
      throw std::runtime_error(strprintf("step %d: loss %g, gradient norm %g: not finite; the step was "
                                         "not applied", step + 1, loss, grad_norm));
    }
    const float lr = schedule.at(step);
    const double scale = clip_factor(grad_norm, options.adamw.max_grad_norm) / options.global_batch;
    optimizer.step(stage.params(), stage.grads(), lr, static_cast<float>(scale));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    log << strprintf("step %5d/%d | loss %.4f | lr %.2e | grad norm %.3f | %.1f ms | %.0f tok/s\n",
                     step + 1, options.steps, loss, lr, grad_norm, ms, tokens_per_step / ms * 1e3);
    log.flush();
    metrics.write({{"step", step + 1}, {"loss", loss}, {"lr", lr}, {"grad_norm", grad_norm}, {"ms", ms},
                   {"tokens_per_s", tokens_per_step / ms * 1e3}});

    const bool last = step + 1 == options.steps;
    if (validate && (last || (options.eval_every > 0 && (step + 1) % options.eval_every == 0))) {
      const double val_loss = mean_validation_loss(stage, val, options.eval_batches);
      log << strprintf("step %5d | val loss %.4f\n", step + 1, val_loss);
      metrics.write({{"step", step + 1}, {"val_loss", val_loss}});
    }
  }
  return loss;
}

}  // namespace eth

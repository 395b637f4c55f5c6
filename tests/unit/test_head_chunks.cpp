// The head in chunks (Stage::head_samples): a stage whose vocabulary is large beside its layers
// runs the classifier a few samples at a time and never holds the micro-batch's logits, and it
// computes what micro-batches of one sample compute (whose logits fit whole): the same loss, input
// gradients and parameter gradients, up to the order in which fp32 adds the samples' gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/backend_select.hpp"
#include "kernels/host_copy.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/model_tensors.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"

namespace eth::test {
namespace {

constexpr int kB = 8, kT = 8;

// tiny-4l and its Llama twin with a vocabulary padded to 2048 rows: one layer keeps 512 (GPT-2)
// and 488 (Llama) values per token, so a chunk holds 2 and 1 of the 8 samples.
ModelConfig wide_vocabulary(const std::string& path) {
  ModelConfig c = load_model_config(path);
  c.padded_vocab_size = 2048;
  return c;
}

struct Step {
  double train_loss = 0, eval_loss = 0;
  std::vector<float> input_grads, grads;  // (B, T, C) of the first layer's input; the stage's
};

// One training micro-batch of `samples` rows at a time over the kB samples (forward, loss,
// backward, gradients accumulated), then an evaluation of them all the same way.
Step run(const ModelConfig& config, int samples) {
  const auto backend = kernels::make_cpu_backend();
  const LayerRange all{0, config.num_layers};
  Stage stage(config, all, samples, kT, 1, *backend);
  std::vector<float> params(stage.layout().size());
  init_parameters(config, stage.layout(), 5, params.data());
  backend->copy_to_device(stage.params(), params.data(), params.size() * sizeof(float));
  stage.params_written();
  std::vector<int32_t> tokens(static_cast<size_t>(kB) * kT), targets(tokens.size());
  for (size_t k = 0; k < tokens.size(); k++) {
    tokens[k] = static_cast<int32_t>((k * 37 + 5) % config.vocab_size);
    targets[k] = static_cast<int32_t>((k * 53 + 1) % config.vocab_size);
  }
  // The first layer's input gradient: what the embedding's backward receives. Read from a stage
  // that starts at layer 0 through its input_grad(), which holds it after each backward.
  Step out;
  const size_t rows = static_cast<size_t>(samples) * kT * config.channels;
  for (int b = 0; b < kB; b += samples) {
    stage.forward(0, tokens.data() + b * kT, nullptr);
    stage.loss(0, targets.data() + b * kT, 1.0f);
    stage.backward(0, nullptr);
    const std::vector<float> d = kernels::copy_to_host_f32(*backend, stage.input_grad(), rows);
    out.input_grads.insert(out.input_grads.end(), d.begin(), d.end());
  }
  out.train_loss = stage.take_loss_sum();
  out.grads = kernels::copy_to_host_f32(*backend, stage.grads(), stage.layout().size());
  for (int b = 0; b < kB; b += samples) {
    stage.forward(0, tokens.data() + b * kT, nullptr);
    stage.loss(0, targets.data() + b * kT, 0.0f);
  }
  out.eval_loss = stage.take_loss_sum();
  return out;
}

double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.size(); i++) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    ref += double(b[i]) * b[i];
  }
  return std::sqrt(diff / ref);
}

// Bound 1e-6 relative: the two add the same per-sample gradients of the head, and of every layer,
// in another order (by chunks of samples against sample by sample), a few fp32 roundings (6e-8)
// of sums over 8 samples; the losses are per-sample means added in the same order. A chunk's rows
// or targets off by one sample, or a chunk's dW left out, moves them by 1e-2 or more.
void expect_chunks_equal_single_samples(const std::string& path) {
  const ModelConfig config = wide_vocabulary(path);
  const int chunk = Stage::head_samples(config, kB);
  ASSERT_LT(chunk, kB) << "the model must make the head run in chunks";
  ASSERT_EQ(Stage::head_samples(config, 1), 1);
  const Stage::ActivationFootprint chunked = Stage::activation_footprint(
      config, {0, config.num_layers}, kB, kT, kernels::AttentionPath::materialised, kernels::ElementType::f32);
  const Stage::ActivationFootprint reference_one = Stage::activation_footprint(
      config, {0, config.num_layers}, 1, kT, kernels::AttentionPath::materialised, kernels::ElementType::f32);
  // The logits buffer is a chunk's, not the micro-batch's: the scratch grows by less than the
  // whole (B - chunk) T Vp floats of logits over the one-sample stage's.
  EXPECT_LT(chunked.scratch - reference_one.scratch,
            static_cast<size_t>(kB - 1) * kT * config.padded_vocab_size * sizeof(float));

  const Step chunks = run(config, kB), singles = run(config, 1);
  EXPECT_NEAR(chunks.train_loss, singles.train_loss, 1e-6 * std::abs(singles.train_loss)) << path;
  EXPECT_NEAR(chunks.eval_loss, singles.eval_loss, 1e-6 * std::abs(singles.eval_loss)) << path;
  EXPECT_LE(relative_difference(chunks.input_grads, singles.input_grads), 1e-6) << path;
  EXPECT_LE(relative_difference(chunks.grads, singles.grads), 1e-6) << path;
}

TEST(HeadChunks, Gpt2ChunksEqualSingleSamples) { expect_chunks_equal_single_samples("inputs/models/tiny-4l.yaml"); }

TEST(HeadChunks, LlamaChunksEqualSingleSamples) {
  expect_chunks_equal_single_samples("inputs/models/tiny-llama-4l.yaml");
}

// Llama 3's vocabulary at micro-batch 8 and T 4096 (Llama-3-8B): the logits of the whole
// micro-batch would be 8.4 GB in bf16, where one layer keeps 4.6 GB; a chunk's (4 samples, 4.2 GB)
// are no more than that.
TEST(HeadChunks, Llama3VocabularyFitsWhereTheLayersFit) {
  const ModelConfig c = load_model_config("inputs/models/hf/Llama-3-8B/config.json");
  const int B = 8, T = 4096, chunk = Stage::head_samples(c, B);
  EXPECT_LT(chunk, B);
  const double layer = double(B) * T * layer_widths(c).kept(static_cast<size_t>(c.channels));
  EXPECT_LE(double(chunk) * T * c.padded_vocab_size, layer);
}

}  // namespace
}  // namespace eth::test

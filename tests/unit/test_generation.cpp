// Generation (lib/model/generator.hpp, generate.hpp, sampling.hpp; lib/io/text_generation.hpp)
// on the CPU backend with a tiny random GPT-2 (inputs/models/tiny.yaml, GPT-2 initialisation):
// the key/value cache gives the tokens and logits of recomputing the whole context with the
// training forward (Stage); the same seed gives the same text; the padded vocabulary is never
// sampled; streamed text holds back split UTF-8 characters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/twin_backend.hpp"
#include "kernels/host_copy.hpp"
#include "kernels/emulated/cuda_emulated_backend.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/base/utf8.hpp"
#include "lib/io/text_generation.hpp"
#include "lib/model/generate.hpp"
#include "lib/model/stage.hpp"

namespace eth::test {
namespace {

struct TinyModel {
  ModelConfig config;  // tiny.yaml: V 97, Vp 128, maxT 16, L 2, C 32
  std::vector<float> params;
  explicit TinyModel(const char* path = "inputs/models/tiny.yaml") : config(load_model_config(path)) {
    const ParamLayout whole(config, {0, config.num_layers});
    params.resize(whole.size());
    init_parameters(config, whole, 11, params.data());
  }
};

// The logits (Vp) of the last position of `tokens`, by the training forward of a one-stage
// Stage over the whole context: attention_forward, no cache.
std::vector<float> stage_logits(const TinyModel& m, kernels::Backend& backend, const std::vector<int32_t>& tokens) {
  const int T = static_cast<int>(tokens.size()), Vp = m.config.padded_vocab_size;
  Stage stage(m.config, {0, m.config.num_layers}, 1, T, 1, backend);
  backend.copy_to_device(stage.params(), m.params.data(), m.params.size() * sizeof(float));
  stage.params_written();
  stage.forward(0, tokens.data(), nullptr);
  stage.loss(0, std::vector<int32_t>(tokens.size(), 0).data(), 0.0f);  // leaves the logits
  const std::vector<float> all = kernels::copy_to_host_f32(backend, stage.logits(), static_cast<size_t>(T) * Vp);
  return {all.end() - Vp, all.end()};
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); i++) worst = std::max(worst, std::abs(double(a[i]) - b[i]));
  return worst;
}

// Greedy, 30 tokens after a 5-token prompt: past maxT = 16, so the context restarts from its
// last 8 tokens twice. Each step's logits against the Stage's forward over the same context, and
// the same tokens. 1e-5 absolute, in fp32: the two paths differ only in summation order
// (attention_decode's dot-product loop against the materialised kernel's GEMMs; sgemv for 1
// row against sgemm over T rows), each a few fp32 roundings (6e-8 relative) of O(1) activations through
// two layers and a 32-wide head: seen 9e-8 (the worst logit of 30 steps; recorded as the test's
// worst_logit_difference property). A wrong cache
// row, position offset or causal edge moves the logits by 1e-3 or more.
void expect_cache_equals_full_recomputation(std::unique_ptr<kernels::Backend> backend,
                                            const char* model = "inputs/models/tiny.yaml") {
  const TinyModel m(model);
  Generator generator(m.config, *backend, m.params.data());
  SamplingOptions greedy;
  greedy.temperature = 0;
  Sampler sampler(greedy, m.config.vocab_size);
  const std::vector<int32_t> prompt = {3, 14, 15, 92, 65};
  std::vector<int32_t> context = prompt;  // the context rule of generate(): restart from the last maxT / 2
  std::vector<std::vector<float>> cached_logits;
  const std::vector<int32_t> tokens = generate(generator, prompt, 30, sampler, true,
                                               [&](int32_t, const std::vector<float>& l) { cached_logits.push_back(l); });
  ASSERT_EQ(tokens.size(), 30u);
  double worst = 0;
  for (size_t i = 0; i < tokens.size(); i++) {
    const std::vector<float> reference = stage_logits(m, *backend, context);
    worst = std::max(worst, max_abs_diff(cached_logits[i], reference));
    const int32_t expected = static_cast<int32_t>(
        std::max_element(reference.begin(), reference.begin() + m.config.vocab_size) - reference.begin());
    ASSERT_EQ(tokens[i], expected) << "token " << i;
    if (static_cast<int>(context.size()) == m.config.max_seq_len)
      context.erase(context.begin(), context.end() - m.config.max_seq_len / 2);
    context.push_back(tokens[i]);
  }
  ::testing::Test::RecordProperty("worst_logit_difference", strprintf("%.3g", worst));
  EXPECT_LE(worst, 1e-5) << "largest logit difference between the cache and full recomputation";
  // Generation without the cache (every step a prefill) takes the same tokens.
  Sampler again(greedy, m.config.vocab_size);
  EXPECT_EQ(generate(generator, prompt, 30, again, false), tokens);
}

TEST(Generation, CacheEqualsFullRecomputation) { expect_cache_equals_full_recomputation(kernels::make_cpu_backend()); }

// A Llama (tiny-llama-4l: RMSNorm, rotary positions from the cache's offset, SwiGLU, a cache of
// 2 K/V heads for 4 query heads, an untied head) under the same bound and argument.
TEST(Generation, LlamaCacheEqualsFullRecomputation) {
  expect_cache_equals_full_recomputation(kernels::make_cpu_backend(), "inputs/models/tiny-llama-4l.yaml");
}

// The same on the CUDA backend's kernels, in the kernel interpreter: attention_decode's GPU kernel
// against the blocked training attention's, both interpreted.
TEST(Generation, CacheEqualsFullRecomputationOnTheInterpretedGpuKernels) {
  expect_cache_equals_full_recomputation(kernels::make_cuda_emulated_backend());
}

TEST(Generation, LlamaCacheEqualsFullRecomputationOnTheInterpretedGpuKernels) {
  expect_cache_equals_full_recomputation(kernels::make_cuda_emulated_backend(), "inputs/models/tiny-llama-4l.yaml");
}

// On the bf16 path (the CPU twin) the generator holds its caches and activations in two bytes
// and its parameters as bf16 copies (fp32 masters of the embedding only), allocating exactly
// device_bytes (for GPT-2 124M at 1024 positions, less than on fp32), and computes what the
// training forward computes in bf16: the same rounding points (the fused GELU included). The
// two could differ only where their fp32 sums, added in another order (decode attention against
// the materialised kernel's GEMMs; one row against T), straddle a bf16 rounding boundary: seen
// 0 here, over the logits of a 12-token prefill and 4 steps. Bound 1e-3 norm-wise, room for a
// few such flips (each an ulp, 2^-8, of one activation); the fp32 generator, every rounding
// point missing, is 5.5e-3 away, and the test checks that the bound tells the two apart.
void expect_bf16_generator_follows_the_bf16_forward(const char* model) {
  const TinyModel m(model);
  const std::unique_ptr<kernels::Backend> backend = kernels::make_twin_backend(kernels::make_cpu_backend(), kernels::Precision::bf16);
  const size_t bf16_bytes = Generator::device_bytes(m.config, kernels::ElementType::bf16);
  const ModelConfig gpt2 = load_model_config("inputs/models/gpt2-124m.yaml");
  EXPECT_LT(Generator::device_bytes(gpt2, kernels::ElementType::bf16),
            Generator::device_bytes(gpt2, kernels::ElementType::f32));
  const size_t before = backend->allocated_bytes();
  Generator generator(m.config, *backend, m.params.data());
  EXPECT_EQ(backend->allocated_bytes() - before, bf16_bytes);

  const std::unique_ptr<kernels::Backend> fp32 = kernels::make_cpu_backend();
  Generator generator32(m.config, *fp32, m.params.data());
  std::vector<int32_t> context = {3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26};
  std::vector<float> logits = generator.prefill(context), logits32 = generator32.prefill(context);
  auto norm_error = [](const std::vector<float>& got, const std::vector<float>& want) {
    double diff = 0, ref = 0;
    for (size_t i = 0; i < got.size(); i++) {
      diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
      ref += double(want[i]) * want[i];
    }
    return std::sqrt(diff / ref);
  };
  double worst = 0, worst32 = 0;
  for (int32_t next : {7, 50, 2, 71}) {
    const std::vector<float> reference = stage_logits(m, *backend, context);
    worst = std::max(worst, norm_error(logits, reference));
    worst32 = std::max(worst32, norm_error(logits32, reference));
    context.push_back(next);
    logits = generator.step(next);
    logits32 = generator32.step(next);
  }
  std::printf("bf16 generator against the bf16 forward: %.3g; the fp32 generator against it: %.3g\n", worst, worst32);
  EXPECT_LE(worst, 1e-3);
  EXPECT_GT(worst32, 1e-3) << "the bound must tell the bf16 path from the fp32 one";
}

TEST(Generation, Bf16StoresTwoBytesAndFollowsTheBf16Forward) {
  expect_bf16_generator_follows_the_bf16_forward("inputs/models/tiny.yaml");
}

// The same for a Llama (RMSNorm, rotary, SwiGLU and a GQA cache on the bf16 twin).
TEST(Generation, LlamaBf16StoresTwoBytesAndFollowsTheBf16Forward) {
  expect_bf16_generator_follows_the_bf16_forward("inputs/models/tiny-llama-4l.yaml");
}

TEST(Generation, SameSeedSameText) {
  const TinyModel m;
  const std::unique_ptr<kernels::Backend> backend = kernels::make_cpu_backend();
  Generator generator(m.config, *backend, m.params.data());
  const TextTokenizer tokenizer("inputs/tokenizer");
  SamplingOptions s;
  s.temperature = 1.0f, s.top_k = 40, s.top_p = 0.95f, s.seed = 7;
  const std::vector<int32_t> prompt = {40, 41};  // "I", "J": tiny's ids are GPT-2's first 97, one byte each
  int tokens = 0;
  const std::string first = generate_text(generator, tokenizer, prompt, 40, s, {}, [&](int32_t) { tokens++; });
  EXPECT_EQ(tokens, 40) << "GPT-2's built-in BPE has no end token";
  std::string repaired = first;
  EXPECT_EQ(repair_utf8(repaired), 0u) << "the text is valid UTF-8 (ids 94-96, bytes A1-A3 alone, become U+FFFD)";
  EXPECT_EQ(generate_text(generator, tokenizer, prompt, 40, s), first);
  s.seed = 8;
  EXPECT_NE(generate_text(generator, tokenizer, prompt, 40, s), first) << "another seed, another text";
}

// generate() stops after an end token, which it returns last; the tokens before are those it
// takes without one.
TEST(Generation, StopsAfterAnEndToken) {
  const TinyModel m;
  const std::unique_ptr<kernels::Backend> backend = kernels::make_cpu_backend();
  Generator generator(m.config, *backend, m.params.data());
  SamplingOptions s;
  s.temperature = 1.0f, s.seed = 3;
  const std::vector<int32_t> prompt = {40, 41};
  Sampler free_run(s, m.config.vocab_size);
  const std::vector<int32_t> all = generate(generator, prompt, 30, free_run);
  const int32_t end = all[5];
  const size_t stop = std::find(all.begin(), all.end(), end) - all.begin();
  Sampler again(s, m.config.vocab_size);
  const std::vector<int32_t> stopped = generate(generator, prompt, 30, again, true, {}, {end});
  EXPECT_EQ(stopped, std::vector<int32_t>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(stop) + 1));
}

TEST(Sampling, NeverPicksPaddedIdsAndCutsAsAsked) {
  const int V = 10, Vp = 16;
  std::vector<float> logits(Vp);
  for (int i = 0; i < V; i++) logits[i] = 0.1f * static_cast<float>(i % 4);  // ids 3 and 7 lead, tied
  for (int i = V; i < Vp; i++) logits[i] = 100.0f;  // padding the model never trained
  SamplingOptions s;
  s.temperature = 0;
  EXPECT_EQ(Sampler(s, V).next(logits.data()), 3) << "greedy: the first id of the largest real logit";
  s.temperature = 1.0f;
  Sampler all(s, V);
  std::vector<int> seen(V, 0);
  for (int i = 0; i < 2000; i++) {
    const int32_t id = all.next(logits.data());
    ASSERT_LT(id, V) << "a padded id was sampled";
    seen[id]++;
  }
  EXPECT_GT(*std::min_element(seen.begin(), seen.end()), 0) << "temperature 1 with no cut reaches every real id";
  s.top_k = 2;  // ids 3 and 7
  Sampler top2(s, V);
  for (int i = 0; i < 200; i++) {
    const int32_t id = top2.next(logits.data());
    ASSERT_TRUE(id == 3 || id == 7) << id;
  }
  s.top_k = 0, s.top_p = 0.01f;  // the most likely id alone reaches 1%
  Sampler nucleus(s, V);
  for (int i = 0; i < 50; i++) ASSERT_EQ(nucleus.next(logits.data()), 3);
}

TEST(Utf8Stream, HoldsBackSplitCharacters) {
  EXPECT_EQ(complete_utf8_prefix("abc"), 3u);
  EXPECT_EQ(complete_utf8_prefix("a\xC3"), 1u);              // the first byte of é
  EXPECT_EQ(complete_utf8_prefix("a\xC3\xA9"), 3u);          // é complete
  EXPECT_EQ(complete_utf8_prefix("\xE2\x80"), 0u);           // two of the three bytes of an en dash
  EXPECT_EQ(complete_utf8_prefix("x\xF0\x9F\x98"), 1u);      // three of the four of an emoji
  EXPECT_EQ(complete_utf8_prefix("x\xF0\x9F\x98\x80"), 5u);
}

}  // namespace
}  // namespace eth::test

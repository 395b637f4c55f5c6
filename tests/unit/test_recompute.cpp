// Activation recomputation (lib/model/recompute.hpp) inside one stage: selective and full give the
// no-recomputation results bit for bit (the same kernels on the same inputs), and a stage
// allocates exactly the activation footprint its mode promises.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/twin_backend.hpp"
#ifdef ETH_HAVE_SIMT_INTERPRETER
#include "kernels/emulated/cuda_emulated_backend.hpp"
#endif
#include "kernels/backend_select.hpp"
#include "kernels/gpu_ops/scratch.hpp"
#include "kernels/host_copy.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/model_tensors.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"

namespace eth::test {
namespace {

constexpr Recompute kModes[] = {Recompute::none, Recompute::selective, Recompute::full};

// Everything a stage hands out in one 1F1B pass: outputs after each forward, input gradients
// after each backward, the loss sum and the parameter gradients.
struct Trace {
  std::vector<float> outputs, input_grads, grads;
  double loss = 0;
};

// Positions of the first differing floats, named for the failure message.
size_t count_differing(const std::vector<float>& a, const std::vector<float>& b, size_t* first) {
  size_t n = 0;
  *first = a.size();
  for (size_t i = 0; i < a.size(); i++)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0 && n++ == 0) *first = i;
  return n;
}

// Runs stage `layers` of `model` (4 layers) through the 1F1B order of a stage with `slots` slots
// and five micro-batches, the last one short (one sample of B = 2). A stage with the head runs
// forward, loss and backward back to back, as 1F1B does there.
Trace run(kernels::Backend& backend, LayerRange layers, int slots, Recompute mode,
          const std::string& model = "inputs/models/tiny-4l.yaml") {
  const ModelConfig config = load_model_config(model);
  const int B = 2, T = 8, C = config.channels, m = 5;
  const size_t BT = static_cast<size_t>(B) * T, BTC = BT * C;
  Stage stage(config, layers, B, T, slots, backend, mode);
  std::vector<float> params(stage.layout().size());
  init_parameters(config, stage.layout(), 7, params.data());
  backend.copy_to_device(stage.params(), params.data(), params.size() * sizeof(float));
  stage.params_written();
  const bool first = layers.begin == 0, last = layers.end == config.num_layers;

  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<int32_t> tokens(BT), targets(BT);
  std::vector<float> input(BTC), doutput(BTC);
  Trace trace;
  auto rows = [&](int i) { return i == m - 1 ? 1 : B; };
  auto append = [&](std::vector<float>& to, kernels::ConstTensor from, size_t n) {
    const std::vector<float> values = kernels::copy_to_host_f32(backend, from, n);
    to.insert(to.end(), values.begin(), values.end());
  };
  auto forward = [&](int i) {
    for (size_t k = 0; k < BT; k++) {
      tokens[k] = static_cast<int32_t>((k * 37 + 11 * i + 5) % config.vocab_size);
      targets[k] = static_cast<int32_t>((k * 53 + 7 * i + 1) % config.vocab_size);
    }
    for (float& x : input) x = normal(rng);
    if (!first) kernels::copy_to_device_f32(backend, stage.input_buffer(i % slots), input.data(), BTC);
    stage.forward(i % slots, tokens.data(), first ? nullptr : stage.input_buffer(i % slots), rows(i));
    append(trace.outputs, stage.output(i % slots), rows(i) * T * C);
    if (last) stage.loss(i % slots, targets.data(), 1.0f);
  };
  auto backward = [&](int i) {
    for (float& x : doutput) x = 0.01f * normal(rng);
    stage.backward(i % slots, doutput.data());
    append(trace.input_grads, stage.input_grad(), rows(i) * T * C);
  };
  const int warmup = last ? 0 : slots - 1;
  for (int i = 0; i < warmup; i++) forward(i);
  for (int i = 0; i < m - warmup; i++) {
    forward(warmup + i);
    backward(i);
  }
  for (int i = m - warmup; i < m; i++) backward(i);
  if (last) trace.loss = stage.take_loss_sum();
  append(trace.grads, stage.grads(), stage.layout().size());
  return trace;
}

void expect_modes_equal_none(kernels::Backend& backend, const std::string& model) {
  for (LayerRange layers : {LayerRange{0, 4}, LayerRange{0, 2}, LayerRange{1, 3}, LayerRange{2, 4}}) {
    const Trace none = run(backend, layers, 3, Recompute::none, model);
    for (Recompute mode : {Recompute::selective, Recompute::full}) {
      const Trace other = run(backend, layers, 3, mode, model);
      const std::string what = backend.name() + " layers [" + std::to_string(layers.begin) + ", " +
                               std::to_string(layers.end) + ") " + to_string(mode);
      EXPECT_EQ(none.loss, other.loss) << what;
      for (auto [name, a, b] : {std::tuple{"outputs", &none.outputs, &other.outputs},
                                std::tuple{"input gradients", &none.input_grads, &other.input_grads},
                                std::tuple{"parameter gradients", &none.grads, &other.grads}}) {
        ASSERT_EQ(a->size(), b->size()) << what << " " << name;
        size_t first = 0;
        const size_t n = count_differing(*a, *b, &first);
        EXPECT_EQ(n, 0u) << what << ": " << n << " of " << a->size() << " " << name << " differ, first at " << first
                         << " (" << (n ? (*a)[first] : 0.f) << " vs " << (n ? (*b)[first] : 0.f) << ")";
      }
    }
  }
}

TEST(Recompute, SelectiveAndFullEqualNoneBitForBit) {
  for (auto make : {kernels::make_cpu_backend, kernels::make_async_cpu_backend})
    for (const char* model : {"inputs/models/tiny-4l.yaml", "inputs/models/tiny-llama-4l.yaml"})
      expect_modes_equal_none(*make(0), model);
}

#ifdef ETH_HAVE_SIMT_INTERPRETER
// The same on the bf16 kernels in the interpreter (tiny-hs64: attention on the flash kernels).
// Selective recomputation remakes ln1 with the plain layernorm kernel where the forward ran it
// fused with the residual add before it: the same bits (the two share normalise_row).
TEST(Recompute, SelectiveAndFullEqualNoneBitForBitOnTheBf16Kernels) {
  const auto backend = kernels::make_cuda_emulated_backend(0, kernels::own_arithmetic_path(kernels::Precision::bf16));
  ASSERT_EQ(backend->arithmetic(), kernels::Arithmetic::bf16);
  expect_modes_equal_none(*backend, "inputs/models/tiny-hs64.yaml");
}
#endif

// What a stage allocates through the backend is what activation_footprint says (the memory
// models build on it): parameters and gradients, the slots, the scratch, and the int32 token
// ids (per slot on the first stage) and targets (last stage). For GPT-2, a Llama (RMSNorm keeps
// no means; rotary positions a table of inverse frequencies; SwiGLU a scratch of its own), and a
// Llama whose vocabulary makes the head run in chunks (its logits buffer a chunk's).
void expect_stage_allocates_its_footprint(const ModelConfig& config) {
  auto backend = kernels::make_cpu_backend();
  const int B = 2, T = 8, slots = 3;
  const size_t BT = static_cast<size_t>(B) * T;
  for (LayerRange layers : {LayerRange{0, 4}, LayerRange{0, 2}, LayerRange{1, 3}, LayerRange{2, 4}}) {
    size_t per_slot[3];
    for (Recompute mode : kModes) {
      const size_t before = backend->allocated_bytes();
      const Stage stage(config, layers, B, T, slots, *backend, mode);
      const Stage::ActivationFootprint fp =
          Stage::activation_footprint(config, layers, B, T, backend->attention_path(T), backend->storage(), mode);
      const size_t tokens = (layers.begin == 0 ? BT * slots : 0) + (layers.end == config.num_layers ? BT : 0);
      EXPECT_EQ(backend->allocated_bytes() - before,
                4 * (2 * stage.layout().size() + tokens) + fp.per_slot * slots + fp.scratch)
          << to_string(mode) << " layers [" << layers.begin << ", " << layers.end << ")";
      per_slot[static_cast<int>(mode)] = fp.per_slot;
    }
    // What each mode is for: fewer floats per micro-batch in flight.
    EXPECT_GT(per_slot[0], per_slot[1]);
    EXPECT_GT(per_slot[1], per_slot[2]);
  }
  EXPECT_EQ(backend->allocated_bytes(), 0u);
  EXPECT_GT(backend->peak_allocated_bytes(), 0u);
}

TEST(Recompute, StageAllocatesItsFootprint) {
  ModelConfig chunked = load_model_config("inputs/models/tiny-llama-4l.yaml");
  chunked.padded_vocab_size = 2048;
  ASSERT_LT(Stage::head_samples(chunked, 2), 2);
  for (const ModelConfig& config : {load_model_config("inputs/models/tiny-4l.yaml"),
                                    load_model_config("inputs/models/tiny-llama-4l.yaml"), chunked})
    expect_stage_allocates_its_footprint(config);
}

// The same on the bf16 paths: activations, scratch and logits stored in two bytes (the layernorm
// and attention statistics in four), so a slot takes more than half and less than all of fp32's
// bytes; and after a step's first forward, loss and backward the backend holds its workspace
// besides (kernels/workspace.hpp, the memory model's term), exactly as reserved at start-up: the
// working copies on the CPU twin (fp32 compute); on the bf16 kernels in the interpreter, with
// heads of 64 channels so that attention runs on the flash kernels, the GPU ops' launch workspace
// (which holds the classifier's token losses too) (an op that asked for more would throw).
void check_bf16_stage_memory(const std::string& model, const std::function<std::unique_ptr<kernels::Backend>()>& make,
                             kernels::Arithmetic arithmetic) {
  const ModelConfig config = load_model_config(model);
  const int B = 2, T = 8, slots = 2, C = config.channels;
  const size_t BT = static_cast<size_t>(B) * T;
  std::vector<int32_t> tokens(BT), targets(BT);
  for (size_t k = 0; k < BT; k++) {
    tokens[k] = static_cast<int32_t>((k * 37 + 5) % config.vocab_size);
    targets[k] = static_cast<int32_t>((k * 53 + 1) % config.vocab_size);
  }
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> input(BT * C), doutput(BT * C), params;
  for (float& x : input) x = normal(rng);
  for (float& x : doutput) x = 0.01f * normal(rng);
  for (LayerRange layers : {LayerRange{0, 4}, LayerRange{0, 2}, LayerRange{1, 3}, LayerRange{2, 4}}) {
    const bool first = layers.begin == 0, last = layers.end == config.num_layers;
    const std::string what = "layers [" + std::to_string(layers.begin) + ", " + std::to_string(layers.end) + ")";
    // A backend of its own per stage: it keeps its workspace for the next stage's ops.
    const std::unique_ptr<kernels::Backend> backend = make();
    ASSERT_EQ(backend->storage(), kernels::ElementType::bf16);
    ASSERT_EQ(backend->arithmetic(), arithmetic);
    const size_t before = backend->allocated_bytes();
    {
      Stage stage(config, layers, B, T, slots, *backend);
      const Stage::ActivationFootprint fp =
          Stage::activation_footprint(config, layers, B, T, backend->attention_path(T), kernels::ElementType::bf16);
      const Stage::ActivationFootprint fp32 =
          Stage::activation_footprint(config, layers, B, T, backend->attention_path(T), kernels::ElementType::f32);
      const size_t ids = (first ? BT * slots : 0) + (last ? BT : 0);
      // fp32 masters and gradients, the bf16 copies the kernels read, token ids, activations.
      const size_t built = 4 * (2 * stage.layout().size() + ids) + 2 * stage.layout().size() + fp.per_slot * slots +
                           fp.scratch;
      EXPECT_EQ(backend->allocated_bytes() - before, built) << what;
      // The workspace reserved as the runtime does at start-up: the step then allocates nothing
      // (a grown workspace would change the bytes held). On the interpreted kernels it holds the
      // GPU ops' launch workspace besides (their scratch comes from the same allocator).
      const kernels::StageShape shape = stage_shape(config, layers, B, T, 0);
      const size_t workspace = kernels::twin_workspace_bytes(shape, arithmetic) +
                               kernels::gpu_ops::launch_workspace_bytes(shape, backend->ops_device());
      backend->reserve_workspace(shape);
      EXPECT_EQ(backend->allocated_bytes() - before, built + workspace) << what;
      EXPECT_LT(fp.per_slot, fp32.per_slot) << what;
      EXPECT_GT(2 * fp.per_slot, fp32.per_slot) << what;

      params.assign(stage.layout().size(), 0.f);
      for (float& x : params) x = 0.02f * normal(rng);
      backend->copy_to_device(stage.params(), params.data(), params.size() * sizeof(float));
      stage.params_written();
      if (!first) kernels::copy_to_device_f32(*backend, stage.input_buffer(0), input.data(), input.size());
      stage.forward(0, tokens.data(), first ? nullptr : stage.input_buffer(0));
      if (last) stage.loss(0, targets.data(), 1.0f);
      std::vector<kernels::bf16> doutput16(doutput.size());
      for (size_t i = 0; i < doutput.size(); i++) doutput16[i] = kernels::cpu::to_bf16(doutput[i]);
      stage.backward(0, last ? kernels::ConstTensor(nullptr) : kernels::ConstTensor(doutput16.data()));
      const std::vector<float> dinput = kernels::copy_to_host_f32(*backend, stage.input_grad(), BT * C);
      EXPECT_TRUE(std::all_of(dinput.begin(), dinput.end(), [](float x) { return std::isfinite(x); })) << what;
      EXPECT_EQ(backend->allocated_bytes() - before, built + workspace) << what << ": the step allocated";
      EXPECT_EQ(backend->peak_allocated_bytes() - before, built + workspace) << what << ": the step allocated";
    }
  }
}

TEST(Recompute, Bf16TwinStageAllocatesItsFootprintAndWorkspace) {
  check_bf16_stage_memory("inputs/models/tiny-4l.yaml",
                          [] { return kernels::make_twin_backend(kernels::make_cpu_backend(), kernels::Precision::bf16); },
                          kernels::Arithmetic::fp32);
}

#ifdef ETH_HAVE_SIMT_INTERPRETER
TEST(Recompute, Bf16KernelsStageAllocatesItsFootprintAndWorkspace) {
  check_bf16_stage_memory("inputs/models/tiny-hs64.yaml", [] {
    return kernels::make_cuda_emulated_backend(0, kernels::own_arithmetic_path(kernels::Precision::bf16));
  }, kernels::Arithmetic::bf16);
}
#endif

}  // namespace
}  // namespace eth::test

// A whole training step of eth::Stage on the CUDA backend against the same step on the CPU
// backend: a 2-layer model, two micro-batches accumulated, then the losses, the evaluation
// logits, every parameter tensor's gradient and the gradient's sum of squares compared; the GPU
// step is run twice, and must repeat itself bit for bit (no atomics anywhere). A second pair of
// stages holds only the last layer (input from a previous stage, the tied head's own copy of
// wte) and compares the gradient it would send back.
#include <cstddef>
#include <string>
#include <vector>

#include "kernels/device_buffer.hpp"
#include "kernels/host_copy.hpp"
#include "lib/base/random.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"
#include "tests/gpu/cuda_checks.hpp"

namespace eth::test::gpu {
namespace {

constexpr int kB = 3, kT = 33, kMicroBatches = 2;

ModelConfig check_model() {
  return gpt2_config("gpu-check", 300, 320, 40, 2, 4, 64);
}

// GPT-2 init plus noise on every element, so that no bias is zero and no layernorm weight one
// (an all-zero tensor would hide a missing term), as tests/oracle does.
std::vector<float> check_params(const ModelConfig& config, const ParamLayout& layout) {
  std::vector<float> p(layout.size());
  init_parameters(config, layout, 1234, p.data());
  const uint64_t noise = hash_string("gpu_check.noise");
  for (size_t i = 0; i < p.size(); i++) p[i] += static_cast<float>(0.05 * normal_at(noise, i));
  return p;
}

std::vector<int32_t> ids(uint64_t stream, int limit) {
  std::vector<int32_t> v(static_cast<size_t>(kMicroBatches) * kB * kT);
  for (size_t i = 0; i < v.size(); i++) v[i] = static_cast<int32_t>(uniform_at(stream, i) * limit);
  return v;
}

struct StepResult {
  std::vector<double> losses;       // (micro-batches)
  std::vector<float> eval_logits;   // (B, T, Vp) of the first micro-batch
  std::vector<float> grads;         // (P)
  std::vector<float> input_grad;    // (B, T, C) of the last micro-batch
  double grad_sum_of_squares = 0;
};

// One step: an evaluation forward, then forward, loss, backward per micro-batch. `input` (host,
// (B, T, C) per micro-batch) feeds a stage without the embedding.
StepResult run_step(const ModelConfig& config, LayerRange layers, kernels::Backend& backend,
                    const std::vector<float>& params, const std::vector<int32_t>& tokens,
                    const std::vector<int32_t>& targets, const std::vector<float>& input) {
  Stage stage(config, layers, kB, kT, 1, backend);
  const size_t P = stage.layout().size(), BT = static_cast<size_t>(kB) * kT;
  const size_t BTC = BT * static_cast<size_t>(config.channels);
  backend.copy_to_device(stage.params(), params.data(), P * sizeof(float));
  stage.params_written();
  const bool first = stage.layout().has_embedding();
  auto forward = [&](int mb) {
    if (first) {
      stage.forward(0, tokens.data() + BT * mb, nullptr);
    } else {
      kernels::copy_to_device_f32(backend, stage.input_buffer(0), input.data() + BTC * mb, BTC);
      stage.forward(0, nullptr, stage.input_buffer(0));
    }
  };

  StepResult r;
  forward(0);
  stage.loss(0, targets.data(), 0.0f);
  stage.take_loss_sum();
  r.eval_logits = kernels::copy_to_host_f32(backend, stage.logits(), BT * static_cast<size_t>(config.padded_vocab_size));
  stage.zero_grads();
  for (int mb = 0; mb < kMicroBatches; mb++) {
    forward(mb);
    stage.loss(0, targets.data() + BT * mb, 1.0f);
    r.losses.push_back(stage.take_loss_sum());
    stage.backward(0, nullptr);
  }
  r.grads = kernels::copy_to_host_f32(backend, stage.grads(), P);
  r.input_grad = kernels::copy_to_host_f32(backend, stage.input_grad(), BTC);
  r.grad_sum_of_squares = backend.sum_of_squares(stage.grads(), P);
  return r;
}

void compare_steps(const std::string& label, const ParamLayout& layout, const StepResult& gpu,
                   const StepResult& cpu, bool with_input_grad, std::vector<Comparison>& out) {
  out.push_back(compare(label + " losses", gpu.losses, cpu.losses, kFp32));
  out.push_back(compare(label + " evaluation logits", gpu.eval_logits, cpu.eval_logits, kFp32));
  for (const ParamTensor& t : layout.tensors()) {
    const auto slice = [&t](const std::vector<float>& g) {
      return std::vector<float>(g.begin() + static_cast<std::ptrdiff_t>(t.offset),
                                g.begin() + static_cast<std::ptrdiff_t>(t.offset + t.size));
    };
    out.push_back(compare(label + " grad " + t.name, slice(gpu.grads), slice(cpu.grads), kStep));
  }
  out.push_back(compare(label + " grad sum of squares", std::vector<double>{gpu.grad_sum_of_squares},
                        std::vector<double>{cpu.grad_sum_of_squares}, kStep));
  if (with_input_grad) out.push_back(compare(label + " input gradient", gpu.input_grad, cpu.input_grad, kStep));
}

}  // namespace

void run_stage_step(kernels::Backend& backend) {
  const ModelConfig config = check_model();
  const LayerRange all{0, config.num_layers};
  run_step(config, all, backend, check_params(config, ParamLayout(config, all)), ids(hash_string("gpu_check.tokens"), config.vocab_size),
           ids(hash_string("gpu_check.targets"), config.vocab_size), {});
}

std::vector<Comparison> stage_step_check(const Backends& be) {
  const ModelConfig config = check_model();
  const std::vector<int32_t> tokens = ids(hash_string("gpu_check.tokens"), config.vocab_size);
  const std::vector<int32_t> targets = ids(hash_string("gpu_check.targets"), config.vocab_size);
  std::vector<Comparison> out;

  // The whole model on one stage.
  const LayerRange all{0, config.num_layers};
  const ParamLayout layout(config, all);
  const std::vector<float> params = check_params(config, layout);
  const StepResult cpu = run_step(config, all, be.cpu, params, tokens, targets, {});
  const StepResult gpu = run_step(config, all, be.gpu, params, tokens, targets, {});
  compare_steps("stage[0,2)", layout, gpu, cpu, false, out);
  const StepResult again = run_step(config, all, be.gpu, params, tokens, targets, {});
  out.push_back(compare("stage[0,2) rerun losses, bitwise", again.losses, gpu.losses, kExact));
  out.push_back(compare("stage[0,2) rerun grads, bitwise", again.grads, gpu.grads, kExact));

  // A last stage fed by a previous one: layer 1, the final layernorm and the head.
  const LayerRange last{1, config.num_layers};
  const ParamLayout last_layout(config, last);
  const std::vector<float> last_params = check_params(config, last_layout);
  std::vector<float> input(static_cast<size_t>(kMicroBatches) * kB * kT * config.channels);
  for (size_t i = 0; i < input.size(); i++) input[i] = static_cast<float>(normal_at(hash_string("gpu_check.input"), i));
  const StepResult cpu_last = run_step(config, last, be.cpu, last_params, tokens, targets, input);
  const StepResult gpu_last = run_step(config, last, be.gpu, last_params, tokens, targets, input);
  compare_steps("stage[1,2)", last_layout, gpu_last, cpu_last, true, out);
  return out;
}

}  // namespace eth::test::gpu

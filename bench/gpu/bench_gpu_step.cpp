// bench_gpu_step: throughput of one full training step of eth::Stage on the CUDA backend (the
// whole model on one GPU): zero grads, forward, fused loss, backward, global gradient norm,
// clipping, AdamW. Prints one JSON line per precision.
//
//   bench_gpu_step --model gpt2-124m|gpt2-350m|smollm2-135m [--batch B] [--seq T] [--steps S] [--warmup W]
//                  [--precisions fp32,tf32,bf16,fp16]
// bf16: bf16 storage on the bf16 kernels (kernels/gpu_ops/gpu_ops_backend.hpp); fp16: the same
// kernels at fp16, the loss scaled by eth_train's initial scale (2^16) and the gradients unscaled
// with the clip factor, as apply_step does (a scale that overflows is not halved here: the loss
// check below fails instead); bf16-fp32compute:
// the same bytes computed in fp32 by the bf16 twin, the path of GPUs without bf16 units
// (ETH_BF16_KERNELS=0).
//
// Model FLOPs per token, the same formula as torch_gpu_step.py so that the two MFUs compare:
//   6 * (12 L C^2 + Vp C)   the matmul weights (the tied LM head included), forward + backward
// + 12 L T C               attention's two T x T products per layer, forward + backward
// for GPT-2; for SmolLM2 the one model description's (lib/model/model_tensors.hpp:
// 6 N + 12 L T NH hs, N its matmul and norm weights and the head).
// MFU is that times tokens/s over the GPU's dense peak for the precision (kernels/gpu_peaks.hpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/twin_backend.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_probe.hpp"
#include "kernels/gpu_peaks.hpp"
#include "lib/base/random.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/model_tensors.hpp"
#include "lib/model/optimizer.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"

namespace {

struct Options {
  std::string model = "gpt2-124m";
  int batch = 0;  // 0: the model's default
  int seq = 1024;
  int steps = 8;
  int warmup = 2;
  std::vector<std::string> precisions = {"fp32", "tf32", "bf16", "fp16"};
};

// The shapes of inputs/models/gpt2-{124m,350m}.yaml and inputs/models/hf/SmolLM2-135M/config.json
// (this program builds without yaml-cpp).
eth::ModelConfig model_config(const std::string& name, int* default_batch) {
  if (name == "smollm2-135m") {
    eth::ModelConfig c = eth::gpt2_config(name, 49152, 49152, 8192, 30, 9, 576);
    c.family = eth::ModelFamily::llama;
    c.num_kv_heads = 3, c.head_dim = 64, c.ffn_channels = 1536;
    c.norm = eth::NormKind::rmsnorm, c.norm_eps = 1e-5;
    c.positions = eth::PositionKind::rotary, c.rope_theta = 100000;
    c.mlp = eth::MlpKind::swiglu;
    c.attention_bias = c.mlp_bias = false;
    *default_batch = 16;
    return c;
  }
  eth::ModelConfig c;
  c.name = name;
  c.vocab_size = 50257;
  c.padded_vocab_size = 50304;
  c.max_seq_len = 1024;
  if (name == "gpt2-124m") {
    c.num_layers = 12, c.num_heads = 12, c.channels = 768;
    *default_batch = 16;
  } else if (name == "gpt2-350m") {
    c.num_layers = 24, c.num_heads = 16, c.channels = 1024;
    *default_batch = 8;
  } else {
    throw std::invalid_argument("--model: expected gpt2-124m, gpt2-350m or smollm2-135m, got " + name);
  }
  c.num_kv_heads = c.num_heads;  // GPT-2's parts (eth::gpt2_config, which reads no YAML either)
  c.head_dim = c.channels / c.num_heads;
  c.ffn_channels = 4 * c.channels;
  return c;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(arg + ": expected a value");
    const std::string value = argv[++i];
    if (arg == "--model") o.model = value;
    else if (arg == "--batch") o.batch = std::stoi(value);
    else if (arg == "--seq") o.seq = std::stoi(value);
    else if (arg == "--steps") o.steps = std::stoi(value);
    else if (arg == "--warmup") o.warmup = std::stoi(value);
    else if (arg == "--precisions") {
      o.precisions.clear();
      std::stringstream ss(value);
      for (std::string p; std::getline(ss, p, ',');) {
        if (p != "fp32" && p != "tf32" && p != "bf16" && p != "fp16" && p != "bf16-fp32compute")
          throw std::invalid_argument("--precisions: expected fp32, tf32, bf16, fp16 or bf16-fp32compute, got " + p);
        o.precisions.push_back(p);
      }
    } else {
      throw std::invalid_argument("unknown option " + arg);
    }
  }
  if (o.steps < 1 || o.warmup < 0) throw std::invalid_argument("--steps must be >= 1 and --warmup >= 0");
  return o;
}

double flops_per_token(const eth::ModelConfig& c, int T) {
  if (c.family == eth::ModelFamily::llama) return eth::training_flops_per_token(c, T);
  const double L = c.num_layers, C = c.channels, Vp = c.padded_vocab_size;
  return 6.0 * (12.0 * L * C * C + Vp * C) + 12.0 * L * T * C;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    int default_batch = 0;
    const eth::ModelConfig config = model_config(o.model, &default_batch);
    const int B = o.batch > 0 ? o.batch : default_batch, T = o.seq;
    if (T > config.max_seq_len) throw std::invalid_argument("--seq: at most " + std::to_string(config.max_seq_len));

    std::string why;
    if (eth::kernels::usable_cuda_devices(&why) == 0) {
      std::cerr << "bench_gpu_step: no usable GPU (" << why << ")\n";
      return 77;
    }
    const std::string device = eth::kernels::cuda_device_props(0).name;
    const eth::kernels::GpuPeak* peak = eth::kernels::find_gpu_peak(device);

    const eth::LayerRange all{0, config.num_layers};
    const eth::ParamLayout layout(config, all);
    const size_t P = layout.size(), BT = static_cast<size_t>(B) * T;
    std::vector<float> params(P);  // (P), once for every precision
    eth::init_parameters(config, layout, 1337, params.data());
    // A few fixed batches of random tokens (throughput does not depend on their values).
    constexpr int kBatches = 4;
    std::vector<int32_t> tokens(kBatches * BT), targets(kBatches * BT);  // (kBatches, B, T)
    for (size_t i = 0; i < tokens.size(); i++) {
      tokens[i] = static_cast<int32_t>(eth::uniform_at(1, i) * config.vocab_size);
      targets[i] = static_cast<int32_t>(eth::uniform_at(2, i) * config.vocab_size);
    }

    for (const std::string& precision : o.precisions) {
      using eth::kernels::Precision;
      std::unique_ptr<eth::kernels::Backend> backend =
          precision == "bf16-fp32compute"
              ? eth::kernels::make_twin_backend(eth::kernels::make_cuda_backend(0), Precision::bf16)
              : eth::kernels::make_cuda_backend(
                    0, eth::kernels::own_arithmetic_path(eth::kernels::parse_precision(precision)));
      eth::Stage stage(config, all, B, T, 1, *backend);
      // As eth_train: the workspace before the first step, so that no step allocates.
      backend->reserve_workspace(eth::stage_shape(config, all, B, T, 0));
      backend->copy_to_device(stage.params(), params.data(), P * sizeof(float));
      stage.params_written();
      const eth::AdamWConfig adamw_config;
      eth::AdamW adamw(layout, adamw_config, *backend);

      std::vector<double> step_ms;
      double first_loss = 0, last_loss = 0;
      const float loss_scale = precision == "fp16" ? 65536.0f : 1.0f;
      for (int step = 0; step < o.warmup + o.steps; step++) {
        const size_t at = BT * static_cast<size_t>(step % kBatches);
        const auto start = std::chrono::steady_clock::now();
        stage.zero_grads();
        stage.forward(0, tokens.data() + at, nullptr);
        stage.loss(0, targets.data() + at, loss_scale);
        stage.backward(0, nullptr);
        const double loss = stage.take_loss_sum() / B;  // a read of the device, as eth_train's once per step
        const double norm = std::sqrt(backend->sum_of_squares(stage.grads(), P)) / loss_scale / B;
        if (!std::isfinite(norm)) throw std::runtime_error("gradient norm not finite at step " + std::to_string(step + 1));
        adamw.step(stage.params(), stage.param_copies(), stage.grads(), 3e-4f,
                   static_cast<float>(eth::clip_factor(norm, adamw_config.max_grad_norm) / B / loss_scale));
        float probe = 0;  // waits for the step's last kernel
        backend->copy_to_host(&probe, stage.params(), sizeof(float));
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (step == 0) first_loss = loss;
        last_loss = loss;
        if (step >= o.warmup) step_ms.push_back(ms);
        if (!std::isfinite(loss)) throw std::runtime_error("loss is not finite at step " + std::to_string(step + 1));
      }
      std::sort(step_ms.begin(), step_ms.end());
      const double median_ms = step_ms[step_ms.size() / 2];
      const double tokens_per_s = static_cast<double>(BT) / (median_ms / 1e3);
      const double fpt = flops_per_token(config, T);
      const double tflops = tokens_per_s * fpt / 1e12;
      const double peak_fp32 = peak != nullptr ? peak->fp32 : 0, peak_tf32 = peak != nullptr ? peak->tf32 : 0;
      const double peak_bf16 = peak != nullptr ? peak->bf16 : 0, peak_fp16 = peak != nullptr ? peak->fp16 : 0;
      // The fp32-compute bf16 path is held to fp32's peak: that is what it computes on.
      const double peak_used = precision == "tf32"   ? peak_tf32
                               : precision == "bf16" ? peak_bf16
                               : precision == "fp16" ? peak_fp16
                                                     : peak_fp32;
      std::printf(
          "{\"impl\": \"eth\", \"model\": \"%s\", \"precision\": \"%s\", \"device\": \"%s\", \"B\": %d, \"T\": %d, "
          "\"steps\": %d, \"step_ms_median\": %.3f, \"step_ms_min\": %.3f, \"tokens_per_s\": %.1f, "
          "\"flops_per_token\": %.6g, \"tflops\": %.3f, \"mfu\": %.4f, \"peak_tflops_fp32\": %g, "
          "\"peak_tflops_tf32\": %g, \"peak_tflops_bf16\": %g, \"peak_tflops_fp16\": %g, \"path\": \"%s\", "
          "\"loss_first\": %.4f, "
          "\"loss_last\": %.4f}\n",
          config.name.c_str(), precision.c_str(), device.c_str(), B, T, o.steps, median_ms, step_ms.front(),
          tokens_per_s, fpt, tflops, peak_used > 0 ? tflops / peak_used : 0.0, peak_fp32, peak_tf32, peak_bf16,
          peak_fp16, backend->precision_path().c_str(), first_loss, last_loss);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_gpu_step: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

// bench_train_step: one rank's training step on the CPU backend, against the machine's sgemm.
//
// Builds an eth::Stage over all layers of a model (optionally fewer layers than its YAML says),
// runs full optimizer steps on random tokens exactly as lib/job/trainer.cpp runs them (zero_grads,
// forward, loss with gradient, backward, gradient norm, clip, AdamW), and, in the same process
// and between the same repeats, times OpenBLAS cblas_sgemm on the step's largest GEMM: the tied
// LM head, logits (B*T, Vp) = x (B*T, C) @ wte^T. Prints one JSON object (and writes it with
// --json); bench/run_train_step.sh runs it beside PyTorch and writes bench/results/.
//
// Model FLOPs per token: eth_train's count (lib/job/model_flops.hpp, 6 N + 12 L T C).
#include <boost/program_options.hpp>
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_stamp.hpp"
#include "bench/fixed_attention.hpp"
#include "bench/timing_backend.hpp"
#include "kernels/backend.hpp"
#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/random.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/job/model_flops.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/optimizer.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"

namespace po = boost::program_options;
using json = nlohmann::json;

namespace {

struct Options {
  std::string model_path = "inputs/models/gpt2-124m.yaml";
  int layers = 0;        // 0: the YAML's num_layers
  int B = 4;
  int T = 256;
  int warmup = 1;        // untimed steps before the first repeat
  int steps = 2;         // timed steps per repeat
  int repeats = 3;       // blocks of `steps` timed steps, each step followed by the sgemm timings
  int sgemm_calls = 1;   // timed calls per head GEMM orientation after each timed step
  int profile_steps = 1; // extra steps through a per-op timing backend (0: none)
  uint64_t seed = 1337;
  float lr = 6e-4f;
  std::string json_path;  // empty: stdout only
  std::string attention = "backend";  // the CPU backend's choice by T, or "blocked" / "materialised" at every T
};

bool parse_options(int argc, char** argv, Options& o) {
  po::options_description desc("bench_train_step options");
  desc.add_options()
      ("help,h", "print this help")
      ("model", po::value(&o.model_path)->default_value(o.model_path), "model YAML")
      ("layers", po::value(&o.layers)->default_value(o.layers), "transformer layers (0: the YAML's)")
      ("batch", po::value(&o.B)->default_value(o.B), "samples per step, B (one micro-batch)")
      ("seq-len", po::value(&o.T)->default_value(o.T), "tokens per sample, T")
      ("warmup", po::value(&o.warmup)->default_value(o.warmup), "untimed steps first")
      ("steps", po::value(&o.steps)->default_value(o.steps), "timed steps per repeat")
      ("repeats", po::value(&o.repeats)->default_value(o.repeats), "blocks of timed steps (each step followed by the head GEMMs)")
      ("sgemm-calls", po::value(&o.sgemm_calls)->default_value(o.sgemm_calls), "timed calls of each head GEMM after each timed step")
      ("profile-steps", po::value(&o.profile_steps)->default_value(o.profile_steps), "steps through the per-op timer (0: none)")
      ("seed", po::value(&o.seed)->default_value(o.seed), "seed of parameters and tokens")
      ("attention", po::value(&o.attention)->default_value(o.attention),
       "backend (the kernel the CPU backend chooses by T), or blocked or materialised at every T, for comparison")
      ("json", po::value(&o.json_path), "also write the JSON here");
  if (!eth::parse_command_line(argc, argv, desc)) return false;
  if (o.attention != "backend" && o.attention != "blocked" && o.attention != "materialised")
    eth::fail_input("--attention", "value", "backend, blocked or materialised", o.attention);
  if (o.layers < 0) eth::fail_input("--layers", "value", "0 or a positive layer count", std::to_string(o.layers));
  if (o.B <= 0) eth::fail_input("--batch", "value", "a positive sample count", std::to_string(o.B));
  if (o.T <= 0) eth::fail_input("--seq-len", "value", "a positive token count", std::to_string(o.T));
  if (o.warmup < 0) eth::fail_input("--warmup", "value", "a non-negative step count", std::to_string(o.warmup));
  if (o.steps <= 0) eth::fail_input("--steps", "value", "a positive step count", std::to_string(o.steps));
  if (o.repeats <= 0) eth::fail_input("--repeats", "value", "a positive count", std::to_string(o.repeats));
  if (o.sgemm_calls <= 0) eth::fail_input("--sgemm-calls", "value", "a positive count", std::to_string(o.sgemm_calls));
  if (o.profile_steps < 0) eth::fail_input("--profile-steps", "value", "0 or more", std::to_string(o.profile_steps));
  return true;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const size_t n = x.size();
  return n % 2 == 1 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

json summary(const std::vector<double>& x) {
  return {{"median", median(x)},
          {"min", *std::min_element(x.begin(), x.end())},
          {"max", *std::max_element(x.begin(), x.end())},
          {"values", x}};
}

// One optimizer step on one micro-batch, as lib/job/trainer.cpp performs it with micro_batch ==
// global_batch. Returns the loss.
double train_step(eth::Stage& stage, eth::AdamW& optimizer, eth::kernels::Backend& backend,
                  const int32_t* inputs, const int32_t* targets, float lr, float max_grad_norm) {
  const int B = stage.micro_batch();
  stage.zero_grads();
  stage.forward(0, inputs, nullptr);
  stage.loss(0, targets, 1.0f);
  const double loss = stage.take_loss_sum() / B;
  stage.backward(0, nullptr);
  const double grad_norm = std::sqrt(backend.sum_of_squares(stage.grads(), stage.layout().size())) / B;
  if (!std::isfinite(loss) || !std::isfinite(grad_norm))
    throw std::runtime_error(eth::strprintf("loss %g, gradient norm %g: not finite", loss, grad_norm));
  const double scale = eth::clip_factor(grad_norm, max_grad_norm) / B;
  optimizer.step(stage.params(), stage.param_copies(), stage.grads(), lr, static_cast<float>(scale));
  return loss;
}

// GPT-2's initial parameters, computed once (serially, in lib/) and copied into each stage.
class InitialParameters {
 public:
  void copy_into(eth::Stage& stage, eth::kernels::Backend& backend, uint64_t seed) {
    if (host_.empty()) {
      host_.resize(stage.layout().size());
      eth::init_parameters(stage.config(), stage.layout(), seed, host_.data());
    }
    backend.copy_to_device(stage.params(), host_.data(), host_.size() * sizeof(float));
    stage.params_written();
  }

 private:
  std::vector<float> host_;
};

// Random (B, T) token batches, inputs and targets, one pair per step.
struct Batches {
  Batches(int count, int B, int T, int V, uint64_t seed) : n(static_cast<size_t>(B) * T) {
    tokens.resize(static_cast<size_t>(count) * (n + 1));
    for (size_t i = 0; i < tokens.size(); i++)
      tokens[i] = static_cast<int32_t>(eth::mix64(seed * 0x9e3779b97f4a7c15ULL + i) % static_cast<uint64_t>(V));
  }
  // Targets are the inputs shifted by one token, as in a real stream.
  const int32_t* inputs(int step) const { return tokens.data() + static_cast<size_t>(step) * (n + 1); }
  const int32_t* targets(int step) const { return inputs(step) + 1; }
  size_t n;
  std::vector<int32_t> tokens;
};

// The LM head's three GEMMs, in the orientations the step runs them (kernels/cpu/gpt_ops.cpp).
struct GemmShape {
  std::string name;
  bool trans_a, trans_b;
  int M, N, K;
  float beta;
  double flops() const { return 2.0 * M * N * K; }
};

class HeadGemms {
 public:
  HeadGemms(int BT, int C, int Vp)
      : shapes_{{"head_forward: logits(BT,Vp) = x(BT,C) @ wte(Vp,C)^T [NoTrans,Trans]", false, true, BT, Vp, C, 0.0f},
                {"head_backward_dx: dx(BT,C) = dlogits(BT,Vp) @ wte(Vp,C) [NoTrans,NoTrans]", false, false, BT, C, Vp, 0.0f},
                {"head_backward_dw: dwte(Vp,C) += dlogits^T @ x(BT,C) [Trans,NoTrans]", true, false, Vp, C, BT, 1.0f}},
        x_(static_cast<size_t>(BT) * C), w_(static_cast<size_t>(Vp) * C), logits_(static_cast<size_t>(BT) * Vp),
        dx_(x_.size()), dw_(w_.size()), C_(C), Vp_(Vp) {
    auto fill = [](std::vector<float>& v, uint64_t stream) {
#pragma omp parallel for schedule(static)
      for (size_t i = 0; i < v.size(); i++) v[i] = static_cast<float>(eth::uniform_at(stream, i) - 0.5);
    };
    fill(x_, 1);
    fill(w_, 2);
    fill(logits_, 3);
    std::fill(dw_.begin(), dw_.end(), 0.0f);
    for (size_t s = 0; s < shapes_.size(); s++) run(s);  // first touch and OpenBLAS buffers
  }

  const std::vector<GemmShape>& shapes() const { return shapes_; }

  // Wall time of `calls` calls of shape s.
  double time_ms(size_t s, int calls) {
    const double start = now_ms();
    for (int i = 0; i < calls; i++) run(s);
    return now_ms() - start;
  }

 private:
  void run(size_t s) {
    const GemmShape& g = shapes_[s];
    const CBLAS_TRANSPOSE ta = g.trans_a ? CblasTrans : CblasNoTrans, tb = g.trans_b ? CblasTrans : CblasNoTrans;
    if (s == 0) {
      cblas_sgemm(CblasRowMajor, ta, tb, g.M, g.N, g.K, 1.0f, x_.data(), C_, w_.data(), C_, g.beta, logits_.data(), Vp_);
    } else if (s == 1) {
      cblas_sgemm(CblasRowMajor, ta, tb, g.M, g.N, g.K, 1.0f, logits_.data(), Vp_, w_.data(), C_, g.beta, dx_.data(), C_);
    } else {
      cblas_sgemm(CblasRowMajor, ta, tb, g.M, g.N, g.K, 1.0f, logits_.data(), Vp_, x_.data(), C_, g.beta, dw_.data(), C_);
    }
  }

  std::vector<GemmShape> shapes_;
  std::vector<float> x_, w_, logits_, dx_, dw_;
  int C_, Vp_;
};

std::string openblas_parallel_name() {
  switch (openblas_get_parallel()) {
    case 0: return "sequential";
    case 1: return "pthreads";
    case 2: return "openmp";
    default: return "unknown";
  }
}

json run(const Options& o) {
  eth::ModelConfig model = eth::load_model_config(o.model_path);
  if (o.layers > 0) model.num_layers = o.layers;
  if (o.T > model.max_seq_len)
    eth::fail_input("--seq-len", "value", "at most max_seq_len = " + std::to_string(model.max_seq_len), std::to_string(o.T));
  const int B = o.B, T = o.T, BT = B * T;
  const eth::AdamWConfig adamw;  // the trainer's defaults: betas (0.9, 0.95), wd 0.1, clip 1.0
  // Both arms run through a TimingBackend, so that they carry the same per-op overhead (two clock
  // reads per op, microseconds in a step of seconds).
  std::unique_ptr<eth::kernels::Backend> cpu = eth::kernels::make_cpu_backend();
  std::unique_ptr<eth::kernels::Backend> backend;
  if (o.attention == "backend") {
    backend = std::make_unique<eth::bench::TimingBackend>(*cpu);
  } else {
    backend = std::make_unique<eth::bench::FixedAttention>(*cpu, o.attention == "materialised"
                                                                     ? eth::kernels::AttentionPath::materialised
                                                                     : eth::kernels::AttentionPath::blocked);
  }

  const int total_steps = o.warmup + o.steps * o.repeats;
  const Batches batches(std::max(total_steps, o.profile_steps), B, T, model.vocab_size, o.seed);
  const double flops_per_token = eth::training_flops_per_token(model, T);
  const double flops_per_step = flops_per_token * BT;

  std::vector<double> step_ms, repeat_ms, losses;
  std::vector<std::vector<double>> sgemm_gflops(3);
  std::vector<GemmShape> gemm_shapes;
  InitialParameters initial;
  size_t param_count = 0;
  {
    eth::Stage stage(model, eth::LayerRange{0, model.num_layers}, B, T, 1, *backend);
    param_count = stage.layout().size();
    initial.copy_into(stage, *backend, o.seed);
    eth::AdamW optimizer(stage.layout(), adamw, *backend);
    HeadGemms gemms(BT, model.channels, model.padded_vocab_size);

    int step = 0;
    for (; step < o.warmup; step++)
      losses.push_back(train_step(stage, optimizer, *backend, batches.inputs(step), batches.targets(step), o.lr,
                                  adamw.max_grad_norm));
    // The machine is shared: each step is followed at once by the head GEMMs, so that a step and
    // the sgemm it is compared with see the same load; a repeat's figures average its steps.
    for (int r = 0; r < o.repeats; r++) {
      double sum = 0.0;
      std::vector<double> gemm_ms(gemms.shapes().size(), 0.0);
      for (int i = 0; i < o.steps; i++, step++) {
        const double start = now_ms();
        losses.push_back(train_step(stage, optimizer, *backend, batches.inputs(step), batches.targets(step), o.lr,
                                    adamw.max_grad_norm));
        step_ms.push_back(now_ms() - start);
        sum += step_ms.back();
        for (size_t s = 0; s < gemms.shapes().size(); s++) gemm_ms[s] += gemms.time_ms(s, o.sgemm_calls);
      }
      repeat_ms.push_back(sum / o.steps);
      for (size_t s = 0; s < gemms.shapes().size(); s++)
        sgemm_gflops[s].push_back(gemms.shapes()[s].flops() * o.sgemm_calls * o.steps / (gemm_ms[s] * 1e6));
      std::cerr << eth::strprintf("repeat %d/%d: %.1f ms/step, %.0f tok/s, model %.1f GFLOP/s, head sgemm %.1f GFLOP/s\n",
                                  r + 1, o.repeats, repeat_ms.back(), BT / repeat_ms.back() * 1e3,
                                  flops_per_step / (repeat_ms.back() * 1e6), sgemm_gflops[0].back());
    }

    gemm_shapes = gemms.shapes();
  }

  // Figures per repeat: its steps and the head GEMMs timed between them saw the same machine state.
  std::vector<double> tokens_per_s, model_gflops, ratio, ratio_all;
  for (int r = 0; r < o.repeats; r++) {
    tokens_per_s.push_back(BT / repeat_ms[r] * 1e3);
    model_gflops.push_back(flops_per_step / (repeat_ms[r] * 1e6));
    ratio.push_back(model_gflops.back() / sgemm_gflops[0][r]);
    // The three head GEMMs together: total FLOPs over total time (equal FLOPs each).
    const double all = 3.0 / (1.0 / sgemm_gflops[0][r] + 1.0 / sgemm_gflops[1][r] + 1.0 / sgemm_gflops[2][r]);
    ratio_all.push_back(model_gflops.back() / all);
  }

  json sgemm = json::array();
  for (size_t s = 0; s < gemm_shapes.size(); s++) {
    const GemmShape& g = gemm_shapes[s];
    sgemm.push_back({{"name", g.name}, {"M", g.M}, {"N", g.N}, {"K", g.K}, {"gflops", summary(sgemm_gflops[s])}});
  }

  json profile = json::object();
  if (o.profile_steps > 0) {
    eth::bench::TimingBackend timing(*backend);
    eth::Stage stage(model, eth::LayerRange{0, model.num_layers}, B, T, 1, timing);
    initial.copy_into(stage, *backend, o.seed);  // real values: zero weights run other arithmetic
    eth::AdamW optimizer(stage.layout(), adamw, timing);
    train_step(stage, optimizer, timing, batches.inputs(0), batches.targets(0), o.lr, adamw.max_grad_norm);
    timing.reset();  // the first step through a fresh stage touches its memory first
    const double start = now_ms();
    for (int i = 0; i < o.profile_steps; i++)
      train_step(stage, optimizer, timing, batches.inputs(i), batches.targets(i), o.lr, adamw.max_grad_norm);
    const double step = (now_ms() - start) / o.profile_steps;
    double accounted = 0.0;
    json ops = json::array();
    std::vector<std::pair<std::string, eth::bench::OpTotal>> sorted(timing.totals().begin(), timing.totals().end());
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    for (const auto& [name, t] : sorted) {
      const double ms = t.ms / o.profile_steps;
      accounted += ms;
      ops.push_back({{"op", name}, {"ms_per_step", ms}, {"calls_per_step", t.calls / o.profile_steps},
                     {"share", ms / step}});
    }
    profile = {{"steps", o.profile_steps}, {"ms_per_step", step}, {"ms_outside_backend", step - accounted},
               {"ops", ops}};
  }

  const json config = {{"model", o.model_path}, {"name", model.name}, {"layers", model.num_layers},
                       {"heads", model.num_heads}, {"channels", model.channels}, {"vocab", model.vocab_size},
                       {"padded_vocab", model.padded_vocab_size}, {"B", B}, {"T", T}, {"tokens_per_step", BT},
                       {"parameters", param_count}, {"flop_parameters", eth::flop_parameters(model)}};
  const json threads = {{"omp_max_threads", omp_get_max_threads()},
                        {"openblas_threads", openblas_get_num_threads()},
                        {"openblas_parallel", openblas_parallel_name()},
                        {"openblas_config", openblas_get_config()},
                        {"openblas_corename", openblas_get_corename()}};
  return {{"benchmark", "train_step"},
          {"implementation", "eth (CPU backend: OpenBLAS sgemm + OpenMP)"},
          {"attention", o.attention},
          {"config", config},
          {"threads", threads},
          {"timing", {{"warmup_steps", o.warmup}, {"steps_per_repeat", o.steps}, {"repeats", o.repeats},
                      {"sgemm_calls_per_step", o.sgemm_calls}}},
          {"flop_formula", "per token: 6*N + 12*L*T*C (nanoGPT estimate_mfu / PaLM appendix B); N = all parameters "
                           "except wpe, the tied wte counted once with Vp rows (the LM head matmul); full T x T "
                           "attention, no causal halving"},
          {"flops_per_step", flops_per_step},
          {"step_ms", summary(repeat_ms)},
          {"step_ms_each", step_ms},
          {"tokens_per_s", summary(tokens_per_s)},
          {"model_gflops", summary(model_gflops)},
          {"sgemm", sgemm},
          {"sgemm_reference", "head_forward"},
          {"ratio_step_over_sgemm", summary(ratio)},
          {"ratio_step_over_sgemm_all_head_orientations", summary(ratio_all)},
          {"losses", losses},
          {"profile", profile}};
}

}  // namespace

int main(int argc, char** argv) {
  const double load_at_start = eth::bench::load_now();
  try {
    Options o;
    if (!parse_options(argc, argv, o)) return 0;
    const json result = run(o);
    std::cout << result.dump(2) << '\n';
    if (!o.json_path.empty()) eth::bench::write_stamped(o.json_path, result, load_at_start);
  } catch (const eth::InputError& e) {
    std::cerr << "bench_train_step: error: " << e.what() << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "bench_train_step: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

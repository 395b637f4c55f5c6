// oracle_dump: three training steps of a small GPT-2 or Llama on the CPU backend (or the CUDA backend with
// ETH_BACKEND=cuda on a GPU machine), computed exactly as lib/job/trainer.cpp computes them, with every
// tensor that torch_oracle.py checks written out.
//
//   oracle_dump [--params CHECKPOINT.h5] [--tokens FILE.i32] OUT_DIR MODEL_YAML [SEQ_LEN ATTENTION [PRECISION]]
//
// --params: the initial parameters are the checkpoint's (hf_oracle.py compares the logits of a
// converted model), not the noisy GPT-2 init below. --tokens: step 1's first micro-batch, whose
// logits are written, is the file's (B, T) int32 tokens (bench/gpu/hf_transformers.py's prompt),
// not random ones. ATTENTION "" accepts either attention kernel.
// PRECISION (default fp32, on a GPU too): fp32, bf16 or fp16 (with a fixed loss scale of 2^10),
// the backend's precision (--precision);
// torch_oracle.py then emulates the 16-bit rounding points in float64.
//
// OUT_DIR/manifest.json describes the run (the model with every field of its ModelConfig, batch, AdamW settings, per-step loss, gradient
// norm and clip factor), the parameter layout (every tensor's name, shape, offset, size and
// weight_decay) and the data files beside it, all raw little-endian, P = layout().size():
//
//   params_init.f32          (P)                          parameters before step 1
//   tokens.i32, targets.i32  (steps, micro_batches, B, T)
//   logits.f32               (B, T, Vp)   evaluation forward of step 1's first micro-batch
//   grads_step1.f32          (P)          step 1's accumulated gradient: per-sample SUMS over the
//                                         global batch, before the 1/global_batch scale and clipping
//   params_step{1,2,3}.f32   (P)          parameters after each step
//
// Steps are numbered from 1, as in the trainer's log and metrics.jsonl.
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/environment.hpp"
#include "kernels/backend.hpp"
#include "kernels/backend_select.hpp"
#include "kernels/host_copy.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/random.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/io/whole_model.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/optimizer.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

static_assert(std::endian::native == std::endian::little, "the dump files are little-endian");

constexpr int kMicroBatch = 4;    // B
constexpr int kSeqLen = 12;       // T < maxT = 16 of tiny.yaml: wpe rows T.. get no gradient, only decay
                                  // (the default: the command line may ask for another T)
constexpr int kMicroBatches = 2;  // gradient accumulation over 2 micro-batches
constexpr int kGlobalBatch = kMicroBatch * kMicroBatches;
constexpr int kSteps = 3;
constexpr uint64_t kSeed = 1337;
// Every parameter gets += kNoise * normal after the GPT-2 init, so that no bias is zero and no
// layernorm weight is one: an all-zero tensor would hide a missing or misplaced term.
constexpr double kNoise = 0.05;
constexpr float kLr = 1e-2f;  // large, so that three updates move the parameters visibly
// The gradient norm of this run is 0.7 to 1.5, so max_grad_norm 0.02 clips at every step (dump()
// checks that it does). AdamW is invariant to a gradient's scale, so clipping shows in the
// parameters through eps and through clip factors that differ from step to step. Small on
// purpose: the key bias's true gradient is zero (softmax ignores a shift shared by all keys), and
// AdamW turns its float32 rounding noise g into an update of about lr * g / eps; a small scale
// keeps that noise far below eps (see torch_oracle.py).
const eth::AdamWConfig kAdamW{.beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                              .max_grad_norm = 0.02f};
// fp16's loss scale (lib/model/loss_scale.hpp), fixed here: the dlogits and every activation
// gradient are this times the true ones, the parameter gradients unscaled before the norm and
// AdamW, as the runtime does; the reference rounds the scaled values as ETH stores them. 2^10
// keeps the tiny model's gradients clear of fp16's range on both sides.
constexpr float kFp16LossScale = 1024.0f;

template <typename T>
void write_raw(const fs::path& path, const std::vector<T>& data) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(T)));
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

// `n` int32 tokens below V from a file of exactly that many.
void read_tokens(const std::string& path, int V, int32_t* tokens, size_t n) {
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(tokens), static_cast<std::streamsize>(n * sizeof(int32_t)));
  if (!f || f.peek() != std::ifstream::traits_type::eof())
    eth::fail_input(path, "tokens", eth::strprintf("exactly %zu int32 tokens (B, T)", n), "another size");
  for (size_t i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= V) eth::fail_input(path, "tokens", "ids below " + std::to_string(V), std::to_string(tokens[i]));
}

// The manifest entry of one data file.
json file_entry(const std::string& path, const char* dtype, std::vector<size_t> shape) {
  return {{"path", path}, {"dtype", dtype}, {"shape", std::move(shape)}};
}

// The model as torch_oracle.py builds it: every field of ModelConfig, the family's parts by the
// names model files spell them.
json model_entry(const eth::ModelConfig& m) {
  const eth::RopeScaling& s = m.rope_scaling;
  return {{"name", m.name}, {"family", eth::family_name(m.family)}, {"vocab_size", m.vocab_size},
          {"padded_vocab_size", m.padded_vocab_size}, {"max_seq_len", m.max_seq_len},
          {"num_layers", m.num_layers}, {"num_heads", m.num_heads}, {"num_kv_heads", m.num_kv_heads},
          {"head_dim", m.head_dim}, {"channels", m.channels}, {"ffn_channels", m.ffn_channels},
          {"norm", eth::norm_name(m.norm)}, {"norm_eps", m.norm_eps},
          {"positions", eth::positions_name(m.positions)}, {"rope_theta", m.rope_theta},
          {"rope_scaling", {{"factor", s.factor}, {"low_freq_factor", s.low_freq_factor},
                            {"high_freq_factor", s.high_freq_factor},
                            {"original_max_position", s.original_max_position}}},
          {"mlp", eth::mlp_name(m.mlp)}, {"attention_bias", m.attention_bias}, {"mlp_bias", m.mlp_bias},
          {"tied_head", m.tied_head}};
}

// `attention`: "" or the kernel the backend must run at T ("blocked", "materialised"), so that
// a test names the path it covers and fails when the backend's choice moves away from it.
void dump(const fs::path& dir, const std::string& model_path, int T, const std::string& attention,
          eth::kernels::Precision precision, const std::string& params_checkpoint, const std::string& tokens_path) {
  const eth::ModelConfig model = eth::load_model_config(model_path);
  eth::Stage::check_computes(model, model_path);  // an InputError for parts the stage does not compute
  const int B = kMicroBatch, V = model.vocab_size, Vp = model.padded_vocab_size;
  if (T > model.max_seq_len)
    eth::fail_input(model_path, "max_seq_len", "at least " + std::to_string(T), std::to_string(model.max_seq_len));
  fs::create_directories(dir);

  // The CPU backend, or the CUDA one with ETH_BACKEND=cuda on a GPU machine: the oracle then
  // checks the device kernels against float64 PyTorch too.
  // bf16 on the bf16 kernels where the backend has them (the interpreter's, a GPU's), else on the
  // CPU twin: the path of a device with bf16 units.
  const eth::kernels::Arithmetic arithmetic =
      precision == eth::kernels::Precision::bf16 ? eth::kernels::Arithmetic::bf16 : eth::kernels::Arithmetic::fp32;
  const eth::kernels::DeviceSettings device = eth::read_environment().device;
  const eth::kernels::PrecisionPath path = eth::kernels::rank_path({precision, arithmetic, 0}, {}, device);
  const float loss_scale = path.loss_scaled() ? kFp16LossScale : 1.0f;
  eth::kernels::BackendChoice choice = eth::kernels::select_backend(0, 1, path, device);
  std::cout << choice.note << "; precision " << choice.backend->precision_path() << '\n';
  std::unique_ptr<eth::kernels::Backend> backend = std::move(choice.backend);
  const bool blocked = backend->attention_path(T) == eth::kernels::AttentionPath::blocked;
  std::cout << "attention at T = " << T << ": " << (blocked ? "blocked" : "materialised") << '\n';
  if (!attention.empty() && attention != (blocked ? "blocked" : "materialised"))
    eth::fail_input("command line", "ATTENTION", attention + " attention at T = " + std::to_string(T),
                    blocked ? "blocked" : "materialised");
  eth::Stage stage(model, eth::LayerRange{0, model.num_layers}, B, T, 1, *backend);
  const eth::ParamLayout& layout = stage.layout();
  const size_t P = layout.size();

  // Parameters: GPT-2 init, then noise on every element; or the checkpoint's (the one-stage
  // layout is the stage's).
  std::vector<float> params(P);  // (P)
  if (params_checkpoint.empty()) {
    eth::init_parameters(model, layout, kSeed, params.data());
    const uint64_t noise_stream = eth::hash_string("oracle.noise") ^ kSeed;
    for (size_t i = 0; i < P; i++) params[i] += static_cast<float>(kNoise * eth::normal_at(noise_stream, i));
  } else {
    params = eth::read_whole_params(params_checkpoint, model);
  }
  backend->copy_to_device(stage.params(), params.data(), P * sizeof(float));
  stage.params_written();
  write_raw(dir / "params_init.f32", params);

  // Tokens and targets of every (step, micro-batch), uniform in [0, V).
  const size_t BT = static_cast<size_t>(B) * T;
  std::vector<int32_t> tokens(static_cast<size_t>(kSteps) * kMicroBatches * BT);  // (steps, mbs, B, T)
  std::vector<int32_t> targets(tokens.size());                                      // (steps, mbs, B, T)
  const uint64_t token_stream = eth::hash_string("oracle.tokens") ^ kSeed;
  const uint64_t target_stream = eth::hash_string("oracle.targets") ^ kSeed;
  for (size_t i = 0; i < tokens.size(); i++) {
    tokens[i] = static_cast<int32_t>(eth::uniform_at(token_stream, i) * V);
    targets[i] = static_cast<int32_t>(eth::uniform_at(target_stream, i) * V);
  }
  if (!tokens_path.empty()) read_tokens(tokens_path, V, tokens.data(), BT);
  write_raw(dir / "tokens.i32", tokens);
  write_raw(dir / "targets.i32", targets);
  const auto micro_batch = [&](const std::vector<int32_t>& ids, int step, int mb) {  // (B, T)
    return ids.data() + (static_cast<size_t>(step) * kMicroBatches + mb) * BT;
  };

  // Logits of an evaluation forward of step 1's first micro-batch: loss(.., false) leaves them.
  stage.forward(0, micro_batch(tokens, 0, 0), nullptr);
  stage.loss(0, micro_batch(targets, 0, 0), 0.0f);
  const double eval_loss = stage.take_loss_sum() / B;
  write_raw(dir / "logits.f32", eth::kernels::copy_to_host_f32(*backend, stage.logits(), BT * Vp));

  // Training, step by step as train_single_rank() runs it.
  eth::AdamW optimizer(layout, kAdamW, *backend);
  json step_log = json::array();
  for (int step = 0; step < kSteps; step++) {
    stage.zero_grads();
    for (int mb = 0; mb < kMicroBatches; mb++) {
      stage.forward(0, micro_batch(tokens, step, mb), nullptr);
      stage.loss(0, micro_batch(targets, step, mb), loss_scale);
      stage.backward(0, nullptr);
    }
    const double loss = stage.take_loss_sum() / kGlobalBatch;
    // Gradients are sums over samples, loss_scale times the true ones: the mean gradient's norm
    // is theirs over the batch and the scale.
    const double grad_norm = std::sqrt(backend->sum_of_squares(stage.grads(), P)) / loss_scale / kGlobalBatch;
    const double clip = eth::clip_factor(grad_norm, kAdamW.max_grad_norm);
    if (clip >= 1.0) {
      throw std::runtime_error(eth::strprintf("step %d: gradient norm %g does not exceed max_grad_norm %g, so "
                                              "the oracle would not cover clipping; lower kAdamW.max_grad_norm",
                                              step + 1, grad_norm, kAdamW.max_grad_norm));
    }
    if (step == 0) {  // unscaled, as the reference's
      std::vector<float> grads = eth::kernels::copy_to_host_f32(*backend, stage.grads(), P);
      for (float& g : grads) g /= loss_scale;
      write_raw(dir / "grads_step1.f32", grads);
    }
    optimizer.step(stage.params(), stage.param_copies(), stage.grads(), kLr,
                   static_cast<float>(clip / kGlobalBatch / loss_scale));
    write_raw(dir / eth::strprintf("params_step%d.f32", step + 1), eth::kernels::copy_to_host_f32(*backend, stage.params(), P));

    std::cout << eth::strprintf("step %d/%d | loss %.6f | grad norm %.6f | clip factor %.6f\n", step + 1, kSteps,
                                loss, grad_norm, clip);
    step_log.push_back({{"step", step + 1}, {"loss", loss}, {"grad_norm", grad_norm}, {"clip_factor", clip}});
  }

  json tensors = json::array();
  for (const eth::ParamTensor& t : layout.tensors()) {
    tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"offset", t.offset}, {"size", t.size},
                       {"weight_decay", t.weight_decay}});
  }
  const std::vector<size_t> ids_shape{kSteps, kMicroBatches, static_cast<size_t>(B), static_cast<size_t>(T)};
  json files = {
      {"params_init", file_entry("params_init.f32", "float32", {P})},
      {"tokens", file_entry("tokens.i32", "int32", ids_shape)},
      {"targets", file_entry("targets.i32", "int32", ids_shape)},
      {"logits", file_entry("logits.f32", "float32", {static_cast<size_t>(B), static_cast<size_t>(T),
                                                      static_cast<size_t>(Vp)})},
      {"grads_step1", file_entry("grads_step1.f32", "float32", {P})},
  };
  for (int step = 1; step <= kSteps; step++) {
    const std::string name = eth::strprintf("params_step%d", step);
    files[name] = file_entry(name + ".f32", "float32", {P});
  }
  const json manifest = {
      {"model", model_entry(model)},
      {"precision", eth::kernels::precision_name(backend->precision())},
      {"loss_scale", loss_scale},
      {"micro_batch", B},
      {"seq_len", T},
      {"micro_batches", kMicroBatches},
      {"global_batch", kGlobalBatch},
      {"steps", kSteps},
      {"lr", kLr},
      {"adamw", {{"beta1", kAdamW.beta1}, {"beta2", kAdamW.beta2}, {"eps", kAdamW.eps},
                 {"weight_decay", kAdamW.weight_decay}, {"max_grad_norm", kAdamW.max_grad_norm}}},
      {"eval_loss", eval_loss},
      {"step_log", step_log},
      {"tensors", tensors},
      {"files", files},
  };
  std::ofstream out(dir / "manifest.json");
  out << manifest.dump(2) << '\n';
  if (!out) throw std::runtime_error("cannot write " + (dir / "manifest.json").string());
}

}  // namespace

int main(int argc, char** argv) {
  std::string params_checkpoint, tokens_path;
  while (argc > 2 && (std::string(argv[1]) == "--params" || std::string(argv[1]) == "--tokens")) {
    (std::string(argv[1]) == "--params" ? params_checkpoint : tokens_path) = argv[2];
    argv[2] = argv[0];
    argc -= 2;
    argv += 2;
  }
  if (argc != 3 && argc != 5 && argc != 6) {
    std::cerr << "usage: oracle_dump [--params CHECKPOINT.h5] [--tokens FILE.i32] OUT_DIR MODEL_YAML [SEQ_LEN ATTENTION [PRECISION]]\n";
    return 2;
  }
  try {
    const eth::kernels::Precision precision = eth::kernels::parse_precision(argc == 6 ? argv[5] : "fp32");
    if (precision != eth::kernels::Precision::fp32 && precision != eth::kernels::Precision::bf16 &&
        precision != eth::kernels::Precision::fp16)
      eth::fail_input("command line", "PRECISION", "fp32, bf16 or fp16", argv[5]);
    dump(argv[1], argv[2], argc >= 5 ? std::stoi(argv[3]) : kSeqLen, argc >= 5 ? argv[4] : "", precision,
         params_checkpoint, tokens_path);
  } catch (const std::exception& e) {
    std::cerr << "oracle_dump: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

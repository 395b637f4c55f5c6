// bench_kernel_counts: what one training step launches on a GPU, counted by the kernel
// interpreter (ETH_BACKEND=cuda-emulated): per kernel, launches, the global-memory bytes read and
// written, and matrix-instruction FLOPs; per library call (cuBLAS sgemm, CUB's sort) calls, the
// least bytes they must move and their FLOPs. Then the step time those bytes bound at a memory
// bandwidth (default an H200's 4.8 TB/s): the kernels' bytes are counted as requested by their
// threads (every element access, cache hits not subtracted), so that bound is an upper estimate
// of the memory time, and the GEMMs' is a lower one (each operand moved once); and the time their
// FLOPs (the GEMMs' and the mma instructions') take at a dense peak (default an H200's: 67 TFLOP/s
// fp32, 990 bf16).
//
// --precision bf16 counts the bf16 path on the bf16 kernels (kernels/gpu_ops/gpu_ops_backend.hpp):
// bf16 storage, cuBLASLt's bf16 GEMMs, flash attention (at head sizes 64 and 128), and so on.
//
//   bench_kernel_counts [--model M.yaml] [--B 1] [--T 1024] [--precision fp32|bf16] [--bandwidth-tbs 4.8]
//                       [--peak-tflops P] [--json FILE]
//
// The step is lib/job/trainer.cpp's with micro_batch == global_batch: zero_grads, forward, loss
// with gradient, backward, the gradient norm, AdamW.
#include <boost/program_options.hpp>

#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_stamp.hpp"
#include "kernels/emulated/cuda_emulated_backend.hpp"
#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/random.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/model_tensors.hpp"
#include "lib/model/optimizer.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"

namespace po = boost::program_options;
using json = nlohmann::json;
using eth::kernels::emulated::LibraryCounts;
using eth::kernels::simt::KernelCounts;

namespace {

// One training step's counts, per kernel and per library call, and how long the interpreter took.
struct StepCounts {
  std::map<std::string, KernelCounts> kernels;
  std::map<std::string, LibraryCounts> library;
  double loss = 0, seconds = 0;
};

StepCounts count_step(const eth::ModelConfig& model, int B, int T, bool bf16) {
  std::unique_ptr<eth::kernels::Backend> backend =
      eth::kernels::make_cuda_emulated_backend(
          0, eth::kernels::own_arithmetic_path(bf16 ? eth::kernels::Precision::bf16 : eth::kernels::Precision::fp32));
  eth::kernels::emulated::HostLaunch& launch = *eth::kernels::cuda_emulated_launch(*backend);
  eth::Stage stage(model, eth::LayerRange{0, model.num_layers}, B, T, 1, *backend);
  std::vector<float> params(stage.layout().size());
  eth::init_parameters(model, stage.layout(), 1, params.data());
  backend->copy_to_device(stage.params(), params.data(), params.size() * sizeof(float));
  stage.params_written();
  std::vector<int32_t> tokens(static_cast<size_t>(B) * T), targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); i++) {
    tokens[i] = static_cast<int32_t>(eth::uniform_at(11, i) * model.vocab_size);
    targets[i] = static_cast<int32_t>(eth::uniform_at(12, i) * model.vocab_size);
  }
  const eth::AdamWConfig adamw;
  eth::AdamW optimizer(stage.layout(), adamw, *backend);
  backend->reserve_workspace(eth::stage_shape(model, {0, model.num_layers}, B, T, 0));
  launch.reset_counts();  // what making the stage and the optimizer launched is not the step's

  StepCounts out;
  const auto start = std::chrono::steady_clock::now();
  stage.zero_grads();
  stage.forward(0, tokens.data(), nullptr);
  stage.loss(0, targets.data(), 1.0f);
  out.loss = stage.take_loss_sum() / B;
  stage.backward(0, nullptr);
  const double grad_norm = std::sqrt(backend->sum_of_squares(stage.grads(), stage.layout().size())) / B;
  optimizer.step(stage.params(), stage.param_copies(), stage.grads(), 3e-4f,
                 static_cast<float>(eth::clip_factor(grad_norm, adamw.max_grad_norm) / B));
  backend->synchronize();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.kernels = launch.kernel_counts();
  out.library = launch.library_counts();
  return out;
}

// c1 + (L - 1) (c2 - c1): the step of L layers from those of one and two, exact for every count
// (each layer runs the same kernels on the same shapes; the embedding, head and optimizer's
// per-layer parameters add the same per layer).
uint64_t extrapolate(uint64_t c1, uint64_t c2, int L) { return c1 + static_cast<uint64_t>(L - 1) * (c2 - c1); }

StepCounts extrapolate_layers(const StepCounts& one, const StepCounts& two, int L) {
  StepCounts out = two;
  for (auto& [name, c] : out.kernels) {
    const KernelCounts a = one.kernels.count(name) ? one.kernels.at(name) : KernelCounts{};
    c = {extrapolate(a.launches, c.launches, L), extrapolate(a.threads, c.threads, L),
         extrapolate(a.bytes_read, c.bytes_read, L), extrapolate(a.bytes_written, c.bytes_written, L),
         extrapolate(a.mma_flops, c.mma_flops, L)};
  }
  for (auto& [name, c] : out.library) {
    const LibraryCounts a = one.library.count(name) ? one.library.at(name) : LibraryCounts{};
    c = {extrapolate(a.calls, c.calls, L), extrapolate(a.bytes_read, c.bytes_read, L),
         extrapolate(a.bytes_written, c.bytes_written, L), extrapolate(a.flops, c.flops, L)};
  }
  out.seconds = one.seconds + two.seconds;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path = "inputs/models/gpt2-124m.yaml", json_path, precision_name = "fp32";
  int B = 1, T = 1024;
  double bandwidth_tbs = 4.8, peak_tflops = 0;
  bool from_two_layers = false;
  po::options_description desc("bench_kernel_counts options");
  desc.add_options()("help,h", "print this help")("model", po::value(&model_path), "model YAML")(
      "B", po::value(&B), "micro-batch size")("T", po::value(&T), "sequence length")(
      "precision", po::value(&precision_name), "fp32 or bf16 (on the bf16 kernels)")(
      "bandwidth-tbs", po::value(&bandwidth_tbs), "memory bandwidth the bound is priced at, TB/s")(
      "peak-tflops", po::value(&peak_tflops), "dense peak the FLOPs are priced at (default an H200's at the precision)")(
      "from-two-layers", po::bool_switch(&from_two_layers),
      "count steps of 1 and 2 layers and extrapolate to the model's (exact: every layer is the same)")(
      "json", po::value(&json_path), "write the result here too");
  try {
    if (!eth::parse_command_line(argc, argv, desc, true)) return 0;
    const double load_at_start = eth::bench::load_now();
    const eth::ModelConfig model = eth::load_model_config(model_path);
    if (precision_name != "fp32" && precision_name != "bf16")
      eth::fail_input("command line", "--precision", "fp32 or bf16", precision_name);
    const bool bf16 = precision_name == "bf16";
    if (peak_tflops <= 0) peak_tflops = bf16 ? 990 : 67;
    StepCounts counts;
    if (from_two_layers && model.num_layers > 2) {
      eth::ModelConfig shallow = model;
      shallow.num_layers = 1;
      const StepCounts one = count_step(shallow, B, T, bf16);
      shallow.num_layers = 2;
      counts = extrapolate_layers(one, count_step(shallow, B, T, bf16), model.num_layers);
      counts.loss = std::nan("");  // no step of the whole model ran
    } else {
      counts = count_step(model, B, T, bf16);
    }
    const double loss = counts.loss, seconds = counts.seconds;

    json kernels = json::object(), library = json::object();
    uint64_t launches = 0, kernel_bytes = 0, mma_flops = 0, library_calls = 0, library_bytes = 0, gemm_flops = 0;
    std::cout << eth::strprintf("%-28s %9s %14s %14s %12s\n", "kernel", "launches", "bytes read", "bytes written",
                                "mma FLOPs");
    for (const auto& [name, c] : counts.kernels) {
      std::cout << eth::strprintf("%-28s %9llu %14llu %14llu %12llu\n", name.c_str(), (unsigned long long)c.launches,
                                  (unsigned long long)c.bytes_read, (unsigned long long)c.bytes_written,
                                  (unsigned long long)c.mma_flops);
      kernels[name] = {{"launches", c.launches}, {"threads", c.threads}, {"bytes_read", c.bytes_read},
                       {"bytes_written", c.bytes_written}, {"mma_flops", c.mma_flops}};
      launches += c.launches;
      kernel_bytes += c.bytes_read + c.bytes_written;
      mma_flops += c.mma_flops;
    }
    for (const auto& [name, c] : counts.library) {
      std::cout << eth::strprintf("%-28s %9llu %14llu %14llu %12s (%llu FLOPs)\n", name.c_str(),
                                  (unsigned long long)c.calls, (unsigned long long)c.bytes_read,
                                  (unsigned long long)c.bytes_written, "-", (unsigned long long)c.flops);
      library[name] = {{"calls", c.calls}, {"bytes_read", c.bytes_read}, {"bytes_written", c.bytes_written},
                       {"flops", c.flops}};
      library_calls += c.calls;
      library_bytes += c.bytes_read + c.bytes_written;
      gemm_flops += c.flops;
    }
    const double bandwidth = bandwidth_tbs * 1e12;
    const double flops_ms = 1e3 * static_cast<double>(gemm_flops + mma_flops) / (peak_tflops * 1e12);
    const json result = {
        {"model", model.name}, {"B", B}, {"T", T}, {"precision", precision_name},
        {"extrapolated_from_layers", from_two_layers && model.num_layers > 2 ? json::array({1, 2}) : json(nullptr)},
        {"loss", std::isnan(loss) ? json(nullptr) : json(loss)},
        {"interpreter_seconds", seconds},
        {"kernels", kernels}, {"library_calls", library},
        {"totals",
         {{"kernel_launches", launches}, {"kernel_bytes", kernel_bytes}, {"mma_flops", mma_flops},
          {"library_calls", library_calls}, {"library_bytes", library_bytes}, {"library_flops", gemm_flops}}},
        {"bound_ms_at_bandwidth",
         {{"bandwidth_tbs", bandwidth_tbs},
          {"kernels_upper", 1e3 * static_cast<double>(kernel_bytes) / bandwidth},
          {"gemms_lower", 1e3 * static_cast<double>(library_bytes) / bandwidth}}},
        {"flops_ms_at_peak", {{"peak_tflops", peak_tflops}, {"ms", flops_ms}}}};
    std::cout << eth::strprintf(
        "step of %s, B = %d, T = %d (loss %.4f; %.0f s in the interpreter): %llu kernel launches + %llu library "
        "calls; kernels %.2f GB (%.2f ms at %.1f TB/s, an upper estimate), GEMMs at least %.2f GB (%.2f ms), "
        "%.3g GEMM FLOPs, %.3g mma FLOPs (%.2f ms at %.0f TFLOP/s)\n",
        model.name.c_str(), B, T, loss, seconds, (unsigned long long)launches, (unsigned long long)library_calls,
        kernel_bytes / 1e9, 1e3 * kernel_bytes / bandwidth, bandwidth_tbs, library_bytes / 1e9,
        1e3 * library_bytes / bandwidth, static_cast<double>(gemm_flops), static_cast<double>(mma_flops), flops_ms,
        peak_tflops);
    if (!json_path.empty()) eth::bench::write_stamped(json_path, result, load_at_start);
  } catch (const eth::InputError& e) {
    std::cerr << "bench_kernel_counts: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

// bench_kernel_counts: what one training step launches on a GPU, counted by the kernel
// interpreter (ETH_BACKEND=cuda-emulated): per kernel, launches, the global-memory bytes read and
// written, and matrix-instruction FLOPs; per library call (cuBLAS sgemm, CUB's sort) calls, the
// least bytes they must move and their FLOPs. Then the step time those bytes bound at a memory
// bandwidth (default an H200's 4.8 TB/s): the kernels' bytes are counted as requested by their
// threads (every element access, cache hits not subtracted), so that bound is an upper estimate
// of the memory time, and the GEMMs' is a lower one (each operand moved once).
//
//   bench_kernel_counts [--model M.yaml] [--B 1] [--T 1024] [--bandwidth-tbs 4.8] [--json FILE]
//
// The step is lib/job/trainer.cpp's with micro_batch == global_batch: zero_grads, forward, loss
// with gradient, backward, the gradient norm, AdamW.
#include <boost/program_options.hpp>

#include <chrono>
#include <cmath>
#include <iostream>
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
#include "lib/model/optimizer.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"

namespace po = boost::program_options;
using json = nlohmann::json;

int main(int argc, char** argv) {
  std::string model_path = "inputs/models/gpt2-124m.yaml", json_path;
  int B = 1, T = 1024;
  double bandwidth_tbs = 4.8;
  po::options_description desc("bench_kernel_counts options");
  desc.add_options()("help,h", "print this help")("model", po::value(&model_path), "model YAML")(
      "B", po::value(&B), "micro-batch size")("T", po::value(&T), "sequence length")(
      "bandwidth-tbs", po::value(&bandwidth_tbs), "memory bandwidth the bound is priced at, TB/s")(
      "json", po::value(&json_path), "write the result here too");
  try {
    if (!eth::parse_command_line(argc, argv, desc, true)) return 0;
    const double load_at_start = eth::bench::load_now();
    const eth::GptConfig model = eth::load_model_config(model_path);
    std::unique_ptr<eth::kernels::Backend> backend = eth::kernels::make_cuda_emulated_backend();
    eth::kernels::emulated::HostLaunch& launch = *eth::kernels::cuda_emulated_launch(*backend);
    eth::Stage stage(model, eth::LayerRange{0, model.num_layers}, B, T, 1, *backend);
    std::vector<float> params(stage.layout().size());
    eth::init_gpt2_parameters(model, stage.layout(), 1, params.data());
    backend->copy_to_device(stage.params(), params.data(), params.size() * sizeof(float));
    std::vector<int32_t> tokens(static_cast<size_t>(B) * T), targets(tokens.size());
    for (size_t i = 0; i < tokens.size(); i++) {
      tokens[i] = static_cast<int32_t>(eth::uniform_at(11, i) * model.vocab_size);
      targets[i] = static_cast<int32_t>(eth::uniform_at(12, i) * model.vocab_size);
    }
    const eth::AdamWConfig adamw;
    eth::AdamW optimizer(stage.layout(), adamw, *backend);
    launch.reset_counts();  // what making the stage and the optimizer launched is not the step's

    const auto start = std::chrono::steady_clock::now();
    stage.zero_grads();
    stage.forward(0, tokens.data(), nullptr);
    stage.loss(0, targets.data(), true);
    const double loss = stage.take_loss_sum() / B;
    stage.backward(0, nullptr);
    const double grad_norm = std::sqrt(backend->sum_of_squares(stage.grads(), stage.layout().size())) / B;
    optimizer.step(stage.params(), stage.grads(), 3e-4f,
                   static_cast<float>(eth::clip_factor(grad_norm, adamw.max_grad_norm) / B));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    json kernels = json::object(), library = json::object();
    uint64_t launches = 0, kernel_bytes = 0, mma_flops = 0, library_calls = 0, library_bytes = 0, gemm_flops = 0;
    std::cout << eth::strprintf("%-28s %9s %14s %14s %12s\n", "kernel", "launches", "bytes read", "bytes written",
                                "mma FLOPs");
    for (const auto& [name, c] : launch.kernel_counts()) {
      std::cout << eth::strprintf("%-28s %9llu %14llu %14llu %12llu\n", name.c_str(), (unsigned long long)c.launches,
                                  (unsigned long long)c.bytes_read, (unsigned long long)c.bytes_written,
                                  (unsigned long long)c.mma_flops);
      kernels[name] = {{"launches", c.launches}, {"threads", c.threads}, {"bytes_read", c.bytes_read},
                       {"bytes_written", c.bytes_written}, {"mma_flops", c.mma_flops}};
      launches += c.launches;
      kernel_bytes += c.bytes_read + c.bytes_written;
      mma_flops += c.mma_flops;
    }
    for (const auto& [name, c] : launch.library_counts()) {
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
    const json result = {
        {"model", model.name}, {"B", B}, {"T", T}, {"loss", loss}, {"interpreter_seconds", seconds},
        {"kernels", kernels}, {"library_calls", library},
        {"totals",
         {{"kernel_launches", launches}, {"kernel_bytes", kernel_bytes}, {"mma_flops", mma_flops},
          {"library_calls", library_calls}, {"library_bytes", library_bytes}, {"library_flops", gemm_flops}}},
        {"bound_ms_at_bandwidth",
         {{"bandwidth_tbs", bandwidth_tbs},
          {"kernels_upper", 1e3 * static_cast<double>(kernel_bytes) / bandwidth},
          {"gemms_lower", 1e3 * static_cast<double>(library_bytes) / bandwidth}}}};
    std::cout << eth::strprintf(
        "step of %s, B = %d, T = %d (loss %.4f; %.0f s in the interpreter): %llu kernel launches + %llu library "
        "calls; kernels %.2f GB (%.2f ms at %.1f TB/s, an upper estimate), GEMMs at least %.2f GB (%.2f ms), "
        "%.3g GEMM FLOPs, %.3g mma FLOPs\n",
        model.name.c_str(), B, T, loss, seconds, (unsigned long long)launches, (unsigned long long)library_calls,
        kernel_bytes / 1e9, 1e3 * kernel_bytes / bandwidth, bandwidth_tbs, library_bytes / 1e9,
        1e3 * library_bytes / bandwidth, static_cast<double>(gemm_flops), static_cast<double>(mma_flops));
    if (!json_path.empty()) eth::bench::write_stamped(json_path, result, load_at_start);
  } catch (const eth::InputError& e) {
    std::cerr << "bench_kernel_counts: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

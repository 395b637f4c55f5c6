// bench_generate: generation tokens/s with the key/value cache (lib/model/generator.hpp: each
// new token one position's forward) against recomputing the whole context for every token (the
// same Generator, every step a prefill), in one process, runs interleaved so that both see the
// same load. Greedy, from a prompt of random ids; random-initialised weights (GPT-2's
// initialisation): the arithmetic is that of a trained model of the same shape. Reports the
// median of the repeats, and checks that both ways chose the same tokens.
//   bench_generate --model inputs/models/gpt2-124m.yaml --prompt-tokens 64 --new-tokens 64 --repeats 3
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_stamp.hpp"
#include "kernels/backend.hpp"
#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/random.hpp"
#include "lib/model/generate.hpp"

namespace po = boost::program_options;
using json = nlohmann::json;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path = "inputs/models/gpt2-124m.yaml", json_path;
  int prompt_tokens = 64, new_tokens = 64, repeats = 3;
  po::options_description desc("bench_generate options");
  desc.add_options()
      ("help,h", "print this help")
      ("model", po::value(&model_path)->default_value(model_path), "model YAML")
      ("prompt-tokens", po::value(&prompt_tokens)->default_value(prompt_tokens), "prompt length")
      ("new-tokens", po::value(&new_tokens)->default_value(new_tokens), "tokens generated per run")
      ("repeats", po::value(&repeats)->default_value(repeats), "runs of each way, interleaved")
      ("json", po::value(&json_path), "write the result here, stamped");
  try {
    if (!eth::parse_command_line(argc, argv, desc)) return 0;
    const double load_at_start = eth::bench::load_now();
    const eth::ModelConfig model = eth::load_model_config(model_path);
    if (prompt_tokens < 1 || prompt_tokens + new_tokens > model.max_seq_len || new_tokens < 1 || repeats < 1)
      eth::fail_input("--prompt-tokens/--new-tokens", "value", "a prompt and new tokens that fit max_seq_len together",
                      std::to_string(prompt_tokens) + " + " + std::to_string(new_tokens));
    const eth::ParamLayout layout(model, {0, model.num_layers});
    std::vector<float> params(layout.size());
    eth::init_parameters(model, layout, 1337, params.data());
    std::vector<int32_t> prompt(static_cast<size_t>(prompt_tokens));
    for (size_t i = 0; i < prompt.size(); i++)
      prompt[i] = static_cast<int32_t>(eth::uniform_at(7, i) * model.vocab_size);
    const std::unique_ptr<eth::kernels::Backend> backend = eth::kernels::make_cpu_backend();
    eth::Generator generator(model, *backend, params.data());
    eth::SamplingOptions greedy;
    greedy.temperature = 0;

    std::vector<double> seconds[2];  // [0] with the cache, [1] recomputing
    std::vector<int32_t> tokens[2];
    for (int r = 0; r < repeats; r++)
      for (int k : {r % 2, 1 - r % 2}) {  // alternating order
        eth::Sampler sampler(greedy, model.vocab_size);
        const auto t0 = std::chrono::steady_clock::now();
        tokens[k] = eth::generate(generator, prompt, new_tokens, sampler, k == 0);
        seconds[k].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        std::cerr << (k == 0 ? "cache" : "recompute") << " run " << r + 1 << ": " << seconds[k].back() << " s\n";
      }
    const auto rate = [&](int k) {
      std::vector<double> v;
      for (double s : seconds[k]) v.push_back(new_tokens / s);
      return json{{"median", median(v)}, {"min", *std::min_element(v.begin(), v.end())},
                  {"max", *std::max_element(v.begin(), v.end())}, {"seconds", seconds[k]}};
    };
    const json result = {{"benchmark", "generate"},
                         {"config", {{"model", model_path}, {"prompt_tokens", prompt_tokens}, {"new_tokens", new_tokens},
                                     {"repeats", repeats}, {"backend", backend->name()},
                                     {"weights", "random (GPT-2 initialisation, seed 1337)"}, {"sampling", "greedy"}}},
                         {"tokens_per_s", {{"cache", rate(0)}, {"recompute", rate(1)}}},
                         {"speedup_cache", median(seconds[1]) / median(seconds[0])},
                         {"same_tokens", tokens[0] == tokens[1]}};
    std::cout << result.dump(2) << '\n';
    if (!json_path.empty()) eth::bench::write_stamped(json_path, result, load_at_start);
  } catch (const eth::InputError& e) {
    std::cerr << "bench_generate: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

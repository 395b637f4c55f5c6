// eth_sample: text from a trained model. The whole model's parameters come from one source, in
// ETH's one-stage layout (ParamLayout(model, {0, L})): an ETH checkpoint of any plan
// (read_whole_params), an llm.c model file (read_llmc_model) or a Hugging Face folder
// (read_hf_model); load_sample_parameters is the
// one place that picks the source. The prompt is encoded with GPT-2's BPE, generation runs on
// this process's device with a key/value cache (lib/model/generator.hpp), and the text is
// printed as it comes.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/sampling.hpp"

namespace eth {

struct SampleRequest {
  std::string model_path;
  std::string checkpoint_path;  // exactly one of the parameter sources
  std::string llmc_path;
  std::string hf_dir;
  std::string prompt;           // exactly one of the two; "" with no prompt file is refused
  std::string prompt_file;
  std::string tokenizer_dir;
  int max_new_tokens = 64;
  int num_samples = 1;
  SamplingOptions sampling;     // sample s (0-based) draws from seed + s
};

// The rules among the options themselves: one InputError line naming the option.
void check_sample_request(const SampleRequest& request);

// The whole model's parameters from the request's source; an InputError naming the file.
std::vector<float> load_sample_parameters(const SampleRequest& request, const ModelConfig& model);

// Checks, loads and generates: each sample's text (the prompt, then the new text as it comes)
// on `out`, notes (a prompt cut to the context) on `log`.
void run_sample(const SampleRequest& request, kernels::Backend& backend, std::ostream& out, std::ostream& log);

}  // namespace eth

// eth_sample: text from a trained model. The whole model's parameters come from one source, in
// ETH's one-stage layout (ParamLayout(model, {0, L})): an ETH checkpoint of any plan
// (read_whole_params), an llm.c model file (read_llmc_model) or a Hugging Face folder
// (read_hf_model); load_sample_parameters is the
// one place that picks the source. The prompt is encoded with the model's tokenizer
// (lib/io/text_tokenizer.hpp: --tokenizer, else the --hf folder's tokenizer.json, else GPT-2's
// built-in BPE), generation runs on this process's device with a key/value cache
// (lib/model/generator.hpp) until an end token or the token count, and the text is printed as it
// comes.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "lib/io/text_tokenizer.hpp"
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
  std::string tokenizer;         // --tokenizer: a tokenizer.json, a folder holding one, or GPT-2's folder; "" unset
  std::string builtin_tokenizer_dir;  // GPT-2's encoder.json and vocab.bpe, when nothing names another
  bool print_tokens = false;    // each sample's ids on the log
  int max_new_tokens = 64;
  int num_samples = 1;
  SamplingOptions sampling;     // sample s (0-based) draws from seed + s
};

// The rules among the options themselves: one InputError line naming the option.
void check_sample_request(const SampleRequest& request);

// The whole model's parameters from the request's source; an InputError naming the file.
std::vector<float> load_sample_parameters(const SampleRequest& request, const ModelConfig& model);

// The tokenizer the request names: --tokenizer, else the --hf folder's tokenizer.json where it
// has one, else GPT-2's built-in BPE. An InputError naming the file when it cannot serve `model`:
// a tokenizer.json's vocabulary larger than the model's, or a model larger than GPT-2's vocabulary
// without a tokenizer.json (GPT-2's BPE serves smaller models as far as the prompt's tokens are
// theirs).
TextTokenizer open_sample_tokenizer(const SampleRequest& request, const ModelConfig& model);

// Checks, loads and generates: each sample's text (the prompt, then the new text as it comes)
// on `out`, notes (a prompt cut to the context; with print_tokens, the prompt's and the new
// tokens' ids) on `log`.
void run_sample(const SampleRequest& request, kernels::Backend& backend, std::ostream& out, std::ostream& log);

}  // namespace eth

#include "lib/job/sample_tool.hpp"

#include <cmath>

#include "lib/base/input_error.hpp"
#include "lib/base/read_file.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/io/hf_folder.hpp"
#include "lib/io/llmc_model.hpp"
#include "lib/io/text_generation.hpp"
#include "lib/io/whole_model.hpp"
#include "lib/model/stage.hpp"

namespace eth {

void check_sample_request(const SampleRequest& r) {
  const int sources = !r.checkpoint_path.empty() + !r.llmc_path.empty() + !r.hf_dir.empty();
  if (sources != 1)
    fail_input("--checkpoint/--llmc/--hf", "value", "exactly one of the three", sources == 0 ? "none" : std::to_string(sources));
  if (!r.prompt_file.empty() && !r.prompt.empty())
    fail_input("--prompt/--prompt-file", "value", "at most one of the two", "both");
  if (r.prompt_file.empty() && r.prompt.empty())
    fail_input("--prompt", "value", "a non-empty text (or --prompt-file)", "an empty prompt");
  if (r.max_new_tokens <= 0)
    fail_input("--max-new-tokens", "value", "a positive token count", std::to_string(r.max_new_tokens));
  if (r.num_samples <= 0) fail_input("--num-samples", "value", "a positive count", std::to_string(r.num_samples));
  const SamplingOptions& s = r.sampling;
  if (!(s.temperature >= 0 && std::isfinite(s.temperature)))
    fail_input("--temperature", "value", "a finite value >= 0 (0: greedy)", strprintf("%g", s.temperature));
  if (s.top_k < 0) fail_input("--top-k", "value", "0 (all tokens) or a positive count", std::to_string(s.top_k));
  if (!(s.top_p > 0 && s.top_p <= 1)) fail_input("--top-p", "value", "a probability in (0, 1]", strprintf("%g", s.top_p));
}

std::vector<float> load_sample_parameters(const SampleRequest& r, const ModelConfig& model) {
  if (!r.checkpoint_path.empty()) return read_whole_params(r.checkpoint_path, model);
  if (!r.hf_dir.empty()) return read_hf_model(r.hf_dir, model);
  return read_llmc_model(r.llmc_path, model);
}

void run_sample(const SampleRequest& r, kernels::Backend& backend, std::ostream& out, std::ostream& log) {
  check_sample_request(r);
  const ModelConfig model = load_model_config(r.model_path);
  Stage::check_computes(model, r.model_path);
  if (model.vocab_size > kEndOfText + 1)
    fail_input(r.model_path, "vocab_size", strprintf("at most GPT-2's %d tokens", kEndOfText + 1),
               std::to_string(model.vocab_size));
  std::string text = r.prompt;
  if (!r.prompt_file.empty()) {
    text = read_file(r.prompt_file, "prompt file");
    if (text.empty()) fail_input(r.prompt_file, "content", "a non-empty prompt", "an empty file");
  }
  const Gpt2Bpe bpe(r.tokenizer_dir);
  const PromptTokens prompt = encode_prompt(bpe, text, model, r.prompt_file.empty() ? "--prompt" : r.prompt_file);
  if (prompt.dropped > 0)
    log << strprintf("the prompt's %zu tokens exceed the context of %s (max_seq_len %d): its first %d are dropped\n",
                     prompt.tokens.size() + prompt.dropped, model.name.c_str(), model.max_seq_len, prompt.dropped);
  const std::vector<float> params = load_sample_parameters(r, model);
  Generator generator(model, backend, params.data());
  std::string prompt_text;
  for (int32_t t : prompt.tokens) prompt_text += bpe.bytes_of(static_cast<uint16_t>(t));
  for (int s = 0; s < r.num_samples; s++) {
    if (r.num_samples > 1) out << strprintf("--- sample %d of %d ---\n", s + 1, r.num_samples);
    out << prompt_text << std::flush;
    SamplingOptions sampling = r.sampling;
    sampling.seed += static_cast<uint64_t>(s);
    generate_text(generator, bpe, prompt.tokens, r.max_new_tokens, sampling,
                  [&](const std::string& piece) { out << piece << std::flush; });
    out << '\n';
  }
}

}  // namespace eth

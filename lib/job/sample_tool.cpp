#include "lib/job/sample_tool.hpp"

#include <cmath>
#include <filesystem>

#include "lib/base/input_error.hpp"
#include "lib/base/read_file.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/base/utf8.hpp"
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

TextTokenizer open_sample_tokenizer(const SampleRequest& r, const ModelConfig& model) {
  const bool folder_tokenizer = r.tokenizer.empty() && !r.hf_dir.empty() && !tokenizer_json_path(r.hf_dir).empty();
  TextTokenizer tokenizer(!r.tokenizer.empty() ? r.tokenizer : folder_tokenizer ? r.hf_dir : r.builtin_tokenizer_dir);
  if (tokenizer.is_builtin_gpt2() && model.vocab_size > kEndOfText + 1) {
    if (r.tokenizer.empty() && !r.hf_dir.empty())
      fail_input((std::filesystem::path(r.hf_dir) / "tokenizer.json").string(), "--hf",
                 strprintf("the tokenizer of %s's %d tokens beside its weights (or --tokenizer PATH/tokenizer.json)",
                           model.name.c_str(), model.vocab_size),
                 "no such file");
    fail_input(r.model_path, "vocab_size",
               strprintf("at most GPT-2's %d tokens (or --tokenizer with the model's tokenizer.json)", kEndOfText + 1),
               std::to_string(model.vocab_size));
  }
  // GPT-2's built-in BPE serves models of its first ids too (each prompt token checked).
  if (!tokenizer.is_builtin_gpt2() && tokenizer.vocab_size() > static_cast<uint64_t>(model.vocab_size))
    fail_input(tokenizer.path(), "vocabulary", strprintf("at most vocab_size %d of model %s", model.vocab_size, model.name.c_str()),
               std::to_string(tokenizer.vocab_size()) + " tokens");
  return tokenizer;
}

namespace {

// " 1 2 3": ids for the log.
std::string ids_text(const std::vector<int32_t>& ids) {
  std::string text;
  for (int32_t id : ids) text += " " + std::to_string(id);
  return text;
}

}  // namespace

void run_sample(const SampleRequest& r, kernels::Backend& backend, std::ostream& out, std::ostream& log) {
  check_sample_request(r);
  const ModelConfig model = load_model_config(r.model_path);
  Stage::check_computes(model, r.model_path);
  std::string text = r.prompt;
  if (!r.prompt_file.empty()) {
    text = read_file(r.prompt_file, "prompt file");
    if (text.empty()) fail_input(r.prompt_file, "content", "a non-empty prompt", "an empty file");
  }
  const TextTokenizer tokenizer = open_sample_tokenizer(r, model);
  const PromptTokens prompt = encode_prompt(tokenizer, text, model, r.prompt_file.empty() ? "--prompt" : r.prompt_file);
  if (prompt.dropped > 0)
    log << strprintf("the prompt's %zu tokens exceed the context of %s (max_seq_len %d): its first %d are dropped\n",
                     prompt.tokens.size() + prompt.dropped, model.name.c_str(), model.max_seq_len, prompt.dropped);
  const std::vector<float> params = load_sample_parameters(r, model);
  Generator generator(model, backend, params.data());
  std::string prompt_text = tokenizer.decode(prompt.tokens);
  repair_utf8(prompt_text);  // a prompt cut inside a character
  for (int s = 0; s < r.num_samples; s++) {
    if (r.num_samples > 1) out << strprintf("--- sample %d of %d ---\n", s + 1, r.num_samples);
    out << prompt_text << std::flush;
    SamplingOptions sampling = r.sampling;
    sampling.seed += static_cast<uint64_t>(s);
    std::vector<int32_t> new_tokens;
    generate_text(generator, tokenizer, prompt.tokens, r.max_new_tokens, sampling,
                  [&](const std::string& piece) { out << piece << std::flush; },
                  [&](int32_t token) { new_tokens.push_back(token); });
    out << '\n';
    if (r.print_tokens) log << "tokens:" << ids_text(prompt.tokens) << " |" << ids_text(new_tokens) << '\n' << std::flush;
  }
}

}  // namespace eth

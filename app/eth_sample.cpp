// eth_sample: text from a trained model (lib/job/sample_tool.hpp), on this process's device.
//   eth_sample --model M.yaml --checkpoint out/checkpoints/step_N.h5 --prompt "In the beginning"
//   eth_sample --model M.yaml --llmc gpt2_124M.bin --prompt-file prompt.txt --temperature 0.8 --top-k 40
//   eth_sample --model M.yaml --hf DIR --prompt TEXT         (a Llama folder: its tokenizer.json too)
//   eth_sample --model llama.yaml --checkpoint C.h5 --tokenizer PATH/tokenizer.json --prompt TEXT
#include <boost/program_options.hpp>

#include <iostream>
#include <stdexcept>

#include "app/environment.hpp"
#include "kernels/backend_select.hpp"
#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/job/sample_tool.hpp"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  eth::SampleRequest r;
  r.builtin_tokenizer_dir = ETH_TOKENIZER_DIR;
  po::options_description desc("eth_sample options (one process; prints the prompt, then the text as it is generated)");
  desc.add_options()
      ("help,h", "print this help")
      ("model", po::value(&r.model_path)->required(), "model YAML whose dimensions the parameters have")
      ("checkpoint", po::value(&r.checkpoint_path), "an ETH checkpoint (any plan wrote it)")
      ("llmc", po::value(&r.llmc_path), "... or an llm.c model file")
      ("hf", po::value(&r.hf_dir), "... or a Hugging Face GPT-2 or Llama folder (eth_convert --export-hf, save_pretrained)")
      ("prompt", po::value(&r.prompt), "the text to continue")
      ("prompt-file", po::value(&r.prompt_file), "... or a file holding it")
      ("max-new-tokens", po::value(&r.max_new_tokens)->default_value(r.max_new_tokens), "tokens generated per sample")
      ("temperature", po::value(&r.sampling.temperature)->default_value(r.sampling.temperature), "softmax temperature; 0: greedy")
      ("top-k", po::value(&r.sampling.top_k)->default_value(r.sampling.top_k), "draw among the K most likely tokens; 0: all")
      ("top-p", po::value(&r.sampling.top_p)->default_value(r.sampling.top_p), "... and among the fewest whose probability reaches P")
      ("seed", po::value(&r.sampling.seed)->default_value(r.sampling.seed), "seed of the draws: the same seed gives the same text")
      ("num-samples", po::value(&r.num_samples)->default_value(r.num_samples), "samples, sample s drawn with seed + s")
      ("tokenizer", po::value(&r.tokenizer)->value_name("FILE.json|DIR"),
       "the model's tokenizer.json (or a folder holding it), or a folder with GPT-2's encoder.json and vocab.bpe "
       "(default: the --hf folder's tokenizer.json, else GPT-2's built in)")
      ("print-tokens", po::bool_switch(&r.print_tokens), "after each sample, its prompt's and new tokens' ids on stderr");
  try {
    if (!eth::parse_command_line(argc, argv, desc)) return 0;
    eth::check_sample_request(r);
    eth::kernels::BackendChoice choice = eth::kernels::select_backend(
        0, 1, eth::kernels::precision_path(eth::kernels::Precision::fp32, {}), eth::read_environment().device);
    eth::run_sample(r, *choice.backend, std::cout, std::cerr);
  } catch (const eth::InputError& e) {
    std::cerr << "eth_sample: error: " << e.what() << '\n';
    return 1;
  } catch (const std::invalid_argument& e) {  // the backend's settings (kernels/backend_select.hpp)
    std::cerr << "eth_sample: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

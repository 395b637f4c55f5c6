// eth_convert: ETH checkpoints to and from llm.c's GPT-2 model file (lib/io/llmc_model.hpp) and
// a Hugging Face model folder (lib/io/hf_folder.hpp).
//   eth_convert --model M.yaml --import-llmc gpt2_124M.bin --out start.h5   (then eth_train --resume start.h5)
//   eth_convert --model M.yaml --export-llmc out/checkpoints/step_N.h5 --out model.bin
//   eth_convert --model M.yaml --import-hf DIR --out start.h5
//   eth_convert --model M.yaml --export-hf out/checkpoints/step_N.h5 --out DIR
#include <boost/program_options.hpp>

#include <iostream>

#include "app/environment.hpp"
#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/io/hf_folder.hpp"
#include "lib/io/llmc_model.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/stage.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  eth::MpiSession mpi(&argc, &argv, eth::read_environment().comm);
  std::string model_path, import_llmc, export_llmc, import_hf, export_hf, out;
  std::string tokenizer = ETH_TOKENIZER_DIR;
  po::options_description desc("eth_convert options (run on one rank)");
  desc.add_options()
      ("help,h", "print this help")
      ("model", po::value(&model_path)->required(), "model YAML whose dimensions the files have")
      ("import-llmc", po::value(&import_llmc), "llm.c model file to turn into a step-0 checkpoint")
      ("export-llmc", po::value(&export_llmc), "checkpoint whose parameters become an llm.c model file")
      ("import-hf", po::value(&import_hf), "Hugging Face GPT-2 folder (model.safetensors, config.json) to turn into a step-0 checkpoint")
      ("export-hf", po::value(&export_hf), "checkpoint whose parameters become a Hugging Face GPT-2 folder")
      ("tokenizer", po::value(&tokenizer)->default_value(tokenizer)->value_name("DIR"),
       "with --export-hf: the folder of GPT-2's encoder.json and vocab.bpe")
      ("out", po::value(&out)->required(), "the file (or, with --export-hf, the folder) written");
  try {
    if (!eth::parse_command_line(argc, argv, desc, mpi.rank() == 0)) return 0;
    const int given = !import_llmc.empty() + !export_llmc.empty() + !import_hf.empty() + !export_hf.empty();
    if (given != 1)
      eth::fail_input("--import-llmc/--export-llmc/--import-hf/--export-hf", "value", "exactly one of the four",
                      given == 0 ? "none" : std::to_string(given));
    const eth::ModelConfig model = eth::load_model_config(model_path);
    eth::Stage::check_computes(model, model_path);  // llm.c's and Hugging Face's GPT-2 files
    std::string note;
    if (!import_llmc.empty()) eth::import_llmc_model(import_llmc, model, out);
    else if (!export_llmc.empty()) eth::export_llmc_model(export_llmc, model, out);
    else if (!import_hf.empty()) eth::import_hf_model(import_hf, model, out);
    else note = eth::export_hf_model(export_hf, model, out, tokenizer);
    if (mpi.rank() == 0) std::cout << "eth_convert: wrote " << out << (note.empty() ? "" : " (" + note + ")") << '\n';
  } catch (const eth::InputError& e) {
    if (mpi.rank() == 0) std::cerr << "eth_convert: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

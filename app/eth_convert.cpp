// eth_convert: ETH checkpoints to and from llm.c's GPT-2 model file (lib/io/llmc_model.hpp) and
// a Hugging Face model folder (lib/io/hf_folder.hpp).
//   eth_convert --model M.yaml --import-llmc gpt2_124M.bin --out start.h5   (then eth_train --resume start.h5)
//   eth_convert --model M.yaml --export-llmc out/checkpoints/step_N.h5 --out model.bin
//   eth_convert --model M.yaml --import-hf DIR --out start.h5
//   eth_convert --model M.yaml --export-hf out/checkpoints/step_N.h5 --out DIR [--dtype bf16] [--max-shard-size BYTES]
// M is a model YAML or a Hugging Face config.json (a Llama's folder's own, for instance).
#include <boost/program_options.hpp>

#include <iostream>

#include "app/environment.hpp"
#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/io/hf_folder.hpp"
#include "lib/io/llmc_model.hpp"
#include "lib/model/model_config.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  eth::MpiSession mpi(&argc, &argv, eth::read_environment().comm);
  std::string model_path, import_llmc, export_llmc, import_hf, export_hf, out, dtype = "f32";
  eth::HfExportOptions hf_options;
  std::string tokenizer = ETH_TOKENIZER_DIR;
  po::options_description desc("eth_convert options (run on one rank)");
  desc.add_options()
      ("help,h", "print this help")
      ("model", po::value(&model_path)->required(), "model YAML or config.json whose dimensions the files have")
      ("import-llmc", po::value(&import_llmc), "llm.c model file to turn into a step-0 checkpoint")
      ("export-llmc", po::value(&export_llmc), "checkpoint whose parameters become an llm.c model file")
      ("import-hf", po::value(&import_hf), "Hugging Face GPT-2 or Llama folder (config.json, model.safetensors or its shards) to turn into a step-0 checkpoint")
      ("export-hf", po::value(&export_hf), "checkpoint whose parameters become a Hugging Face GPT-2 or Llama folder")
      ("dtype", po::value(&dtype)->default_value(dtype), "with --export-hf: f32 or bf16 (rounded to nearest even)")
      ("max-shard-size", po::value(&hf_options.max_shard_bytes)->default_value(hf_options.max_shard_bytes)->value_name("BYTES"),
       "with --export-hf: tensor bytes per safetensors file, past which a Llama's are sharded")
      ("tokenizer", po::value(&tokenizer)->default_value(tokenizer)->value_name("DIR"),
       "with --export-hf: the folder of GPT-2's encoder.json and vocab.bpe")
      ("out", po::value(&out)->required(), "the file (or, with --export-hf, the folder) written");
  try {
    if (!eth::parse_command_line(argc, argv, desc, mpi.rank() == 0)) return 0;
    const int given = !import_llmc.empty() + !export_llmc.empty() + !import_hf.empty() + !export_hf.empty();
    if (given != 1)
      eth::fail_input("--import-llmc/--export-llmc/--import-hf/--export-hf", "value", "exactly one of the four",
                      given == 0 ? "none" : std::to_string(given));
    if (dtype != "f32" && dtype != "bf16") eth::fail_input("--dtype", "value", "f32 or bf16", dtype);
    hf_options.dtype = dtype == "bf16" ? eth::SafetensorsDtype::bf16 : eth::SafetensorsDtype::f32;
    if (hf_options.max_shard_bytes == 0) eth::fail_input("--max-shard-size", "value", "a positive number of bytes", "0");
    const eth::ModelConfig model = eth::load_model_config(model_path);
    eth::check_converts(model, model_path, !import_hf.empty() || !export_hf.empty());
    std::string note;
    if (!import_llmc.empty()) eth::import_llmc_model(import_llmc, model, out);
    else if (!export_llmc.empty()) eth::export_llmc_model(export_llmc, model, out);
    else if (!import_hf.empty()) eth::import_hf_model(import_hf, model, out);
    else note = eth::export_hf_model(export_hf, model, out, tokenizer, hf_options);
    if (mpi.rank() == 0) std::cout << "eth_convert: wrote " << out << (note.empty() ? "" : " (" + note + ")") << '\n';
  } catch (const eth::InputError& e) {
    if (mpi.rank() == 0) std::cerr << "eth_convert: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

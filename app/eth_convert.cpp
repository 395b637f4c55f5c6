// eth_convert: ETH checkpoints to and from llm.c's GPT-2 model file (lib/io/llmc_model.hpp).
//   eth_convert --model M.yaml --import-llmc gpt2_124M.bin --out start.h5   (then eth_train --resume start.h5)
//   eth_convert --model M.yaml --export-llmc out/checkpoints/step_N.h5 --out model.bin
#include <boost/program_options.hpp>

#include <iostream>

#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/io/llmc_model.hpp"
#include "lib/model/model_config.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  eth::MpiSession mpi(&argc, &argv);
  std::string model_path, import_path, export_path, out;
  po::options_description desc("eth_convert options (run on one rank)");
  desc.add_options()
      ("help,h", "print this help")
      ("model", po::value(&model_path)->required(), "model YAML whose dimensions the files have")
      ("import-llmc", po::value(&import_path), "llm.c model file to turn into a step-0 checkpoint")
      ("export-llmc", po::value(&export_path), "checkpoint whose parameters become an llm.c model file")
      ("out", po::value(&out)->required(), "the file written");
  try {
    if (!eth::parse_command_line(argc, argv, desc, mpi.rank() == 0)) return 0;
    if (import_path.empty() == export_path.empty())
      eth::fail_input("--import-llmc/--export-llmc", "value", "exactly one of the two", import_path.empty() ? "neither" : "both");
    const eth::GptConfig model = eth::load_model_config(model_path);
    if (!import_path.empty()) eth::import_llmc_model(import_path, model, out);
    else eth::export_llmc_model(export_path, model, out);
    if (mpi.rank() == 0) std::cout << "eth_convert: wrote " << out << '\n';
  } catch (const eth::InputError& e) {
    if (mpi.rank() == 0) std::cerr << "eth_convert: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

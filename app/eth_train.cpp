// eth_train: trains a GPT. One MPI rank per device; see docs/usage.md for the options.
#include <boost/program_options.hpp>

#include <iostream>

#include "kernels/backend_select.hpp"
#include "lib/input_error.hpp"
#include "lib/trainer.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace po = boost::program_options;

namespace {

// Returns false when the program should exit without training (--help).
bool parse_options(int argc, char** argv, eth::TrainOptions& o) {
  po::options_description desc("eth_train options");
  desc.add_options()
      ("help,h", "print this help")
      ("model", po::value(&o.model_path)->required(), "model YAML (inputs/models/*.yaml)")
      ("train-data", po::value(&o.train_shards)->multitoken()->required(), "training token shards (llm.c format)")
      ("val-data", po::value(&o.val_shards)->multitoken(), "validation token shards")
      ("batch", po::value(&o.global_batch)->default_value(o.global_batch), "global batch, samples per step")
      ("micro-batch", po::value(&o.micro_batch)->default_value(o.micro_batch), "samples per forward/backward")
      ("seq-len", po::value(&o.seq_len)->default_value(o.seq_len), "tokens per sample, T")
      ("steps", po::value(&o.steps)->default_value(o.steps), "optimizer steps")
      ("lr", po::value(&o.lr.peak)->default_value(o.lr.peak), "peak learning rate")
      ("min-lr", po::value(&o.lr.floor)->default_value(o.lr.floor), "learning rate at the last step (cosine floor)")
      ("warmup", po::value(&o.lr.warmup_steps)->default_value(o.lr.warmup_steps), "linear warm-up steps")
      ("weight-decay", po::value(&o.adamw.weight_decay)->default_value(o.adamw.weight_decay), "AdamW weight decay (matrices only)")
      ("grad-clip", po::value(&o.adamw.max_grad_norm)->default_value(o.adamw.max_grad_norm), "global gradient-norm clip, <= 0 disables")
      ("seed", po::value(&o.seed)->default_value(o.seed), "seed of parameters and data order")
      ("eval-every", po::value(&o.eval_every)->default_value(o.eval_every), "validation every N steps (0: at the end only)")
      ("eval-batches", po::value(&o.eval_batches)->default_value(o.eval_batches), "micro-batches per validation")
      ("output-dir", po::value(&o.output_dir)->default_value(o.output_dir), "where metrics.jsonl is written");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("help")) {
      std::cout << desc << '\n';
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw eth::InputError(std::string("command line: ") + e.what() + " (see --help)");
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  eth::MpiSession mpi(&argc, &argv);
  try {
    eth::TrainOptions options;
    if (!parse_options(argc, argv, options)) return 0;
    if (mpi.size() != 1)
      eth::fail_input("mpirun", "number of ranks", "1 (multi-rank plans are not built yet)", std::to_string(mpi.size()));
    eth::kernels::BackendChoice choice = eth::kernels::select_backend();
    std::cout << choice.note << '\n';
    eth::train_single_rank(options, *choice.backend, std::cout);
  } catch (const eth::InputError& e) {
    std::cerr << "eth_train: error: " << e.what() << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "eth_train: rank " << mpi.rank() << ": " << e.what() << '\n';
    return 1;
  }
  return 0;
}

// eth_train: trains a GPT, one MPI rank per device; docs/usage.md has the options, in the groups
// --help shows.
#include <boost/program_options.hpp>

#include <iostream>

#include "app/environment.hpp"
#include "kernels/backend_select.hpp"
#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/job/job.hpp"
#include "lib/job/trainer.hpp"
#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/watchdog.hpp"
#include "mpi_topology/wire_buffer.hpp"

namespace po = boost::program_options;

namespace {

// Returns false when the program should exit without training (--help).
bool parse_options(int argc, char** argv, eth::TrainOptions& o, bool print_help) {
  std::string grad_sync = "block", fault, precision = "auto";
  std::vector<std::string> slowdowns;
  po::options_description job("Job");
  job.add_options()
      ("help,h", "print this help")
      ("model", po::value(&o.model_path)->required(), "model YAML (inputs/models/*.yaml)")
      ("topology", po::value(&o.topology_path),
       "topology YAML (with --plan); without both: one rank trains alone, several discover and plan their job")
      ("plan", po::value(&o.plan_path), "plan YAML: pipelines, stages, batch split")
      ("profiles", po::value(&o.profiles_dir)->default_value(o.profiles_dir),
       "without --plan on several ranks: directory of profiles the planner uses")
      ("profile", po::value(&o.profile_files)->multitoken(), "... and profile files, preferred over the directory's")
      ("train-data", po::value(&o.train_shards)->multitoken()->required(), "training token shards (llm.c format)")
      ("val-data", po::value(&o.val_shards)->multitoken(), "validation token shards")
      ("batch", po::value(&o.global_batch)->default_value(o.global_batch), "without --plan: global batch, samples per step")
      ("micro-batch", po::value(&o.micro_batch)->default_value(o.micro_batch), "one rank without --plan: samples per forward/backward")
      ("seq-len", po::value(&o.seq_len)->default_value(o.seq_len), "tokens per sample, T")
      ("resume", po::value(&o.resume_path),
       "continue from this checkpoint, under any plan of the same model; 'latest': OUTPUT_DIR's newest undamaged one");
  po::options_description optimisation("Optimisation");
  optimisation.add_options()
      ("steps", po::value(&o.steps)->default_value(o.steps), "optimizer steps")
      ("lr", po::value(&o.lr.peak)->default_value(o.lr.peak, "6e-4"), "peak learning rate")
      ("min-lr", po::value(&o.lr.floor)->default_value(o.lr.floor, "6e-5"), "learning rate at the last step (cosine floor)")
      ("warmup", po::value(&o.lr.warmup_steps)->default_value(o.lr.warmup_steps), "linear warm-up steps")
      ("weight-decay", po::value(&o.adamw.weight_decay)->default_value(o.adamw.weight_decay, "0.1"), "AdamW weight decay (matrices only)")
      ("grad-clip", po::value(&o.adamw.max_grad_norm)->default_value(o.adamw.max_grad_norm), "global gradient-norm clip, <= 0 disables")
      ("seed", po::value(&o.seed)->default_value(o.seed), "seed of parameters and data order")
      ("precision", po::value(&precision)->default_value(precision),
       "auto (bf16 when a device of the job has bf16 units, else fp32), fp32, tf32 (GPUs from A100 on), bf16 or "
       "fp16: fp32 master weights, 16-bit parameter copies and "
       "activations, on the format's tensor cores where a device has them and in fp32 arithmetic where it does "
       "not; fp16 with dynamic loss scaling (docs/design.md)")
      ("loss-scale", po::value(&o.loss_scale.initial)->default_value(o.loss_scale.initial, "65536"),
       "fp16: the initial loss scale, halved on every step whose gradients overflow (the step skipped on every rank)")
      ("loss-scale-window", po::value(&o.loss_scale.window)->default_value(o.loss_scale.window),
       "fp16: clean steps in a row after which the loss scale doubles");
  po::options_description parallelism("Parallelism");
  parallelism.add_options()
      ("grad-sync", po::value(&grad_sync)->default_value(grad_sync), "block (block-wise), per-layer or flat (the baselines)")
      ("shard-optimizer", po::bool_switch(&o.adamw.shard),
       "ZeRO-1: shard the AdamW moments of every gradient block of several owners among them, besides the plan's sharded_blocks (--grad-sync block; MPI reductions)")
      ("rebalance-every", po::value(&o.rebalance.every)->default_value(o.rebalance.every),
       "online re-balancing: every N steps, re-split the batch among pipelines and stage ranks by measured speed (0: off)")
      ("rebalance-threshold", po::value(&o.rebalance.threshold)->default_value(o.rebalance.threshold, "0.05"),
       "re-balance only when the predicted step is at least this fraction faster (hysteresis)")
      ("collective-timeout", po::value(&o.collective_timeout_s)->default_value(o.collective_timeout_s),
       "seconds a collective or transfer may wait before the watchdog names it and the ranks missing, and ends the job (0: off)");
  po::options_description output("Output");
  output.add_options()
      ("output-dir", po::value(&o.output_dir)->default_value(o.output_dir), "where metrics.jsonl is written")
      ("eval-every", po::value(&o.eval_every)->default_value(o.eval_every), "validation every N steps (0: at the end only)")
      ("eval-samples", po::value(&o.eval_samples)->default_value(o.eval_samples), "validation windows per evaluation")
      ("checkpoint-every", po::value(&o.checkpoint_every)->default_value(o.checkpoint_every),
       "HDF5 checkpoint OUTPUT_DIR/checkpoints/step_N.h5 every N steps and after the last (0: none)")
      ("keep-checkpoints", po::value(&o.keep_checkpoints)->default_value(o.keep_checkpoints),
       "keep the newest N complete checkpoints, delete older ones (0: keep all)")
      ("trace", po::value(&o.trace_path), "write a Chrome trace of every rank to this file")
      ("save-params", po::value(&o.save_params_path), "write the whole model after the last step (raw float32, one-stage layout)")
      ("sample-every", po::value(&o.sample_every)->default_value(o.sample_every),
       "rank 0 prints text generated by the model every N steps, and metrics.jsonl records it (0: never)")
      ("sample-tokens", po::value(&o.sample_tokens)->default_value(o.sample_tokens), "tokens per sample")
      ("sample-prompt", po::value(&o.sample_prompt), "the text samples continue (default: <|endoftext|>, a new document)")
      ("tokenizer", po::value(&o.tokenizer_dir)->default_value(o.tokenizer_dir), "folder with GPT-2's encoder.json and vocab.bpe");
  po::options_description testing("Testing");
  testing.add_options()
      ("slowdown", po::value(&slowdowns)->multitoken(),
       "RANK:FACTOR:STEP: that rank computes FACTOR times slower from STEP on (tests, benchmarks; repeatable)")
      ("modelled-compute-ms", po::value(&o.modelled_compute_ms)->default_value(o.modelled_compute_ms),
       "the re-balancer sees MS per sample times each rank's --slowdown factor instead of measured times "
       "(tests whose decisions load must not flip; 0: measured)")
      ("inject-fault", po::value(&fault),
       "KIND:rank=R:step=S[:phase=P][:block=B]: one rank fails on purpose (fault-handling tests; docs/usage.md)");
  po::options_description all("eth_train options");
  all.add(job).add(optimisation).add(parallelism).add(output).add(testing);
  // Every rank parsed the same command line: its mistakes are every rank's.
  try {
    if (!eth::parse_command_line(argc, argv, all, print_help)) {
      if (print_help) std::cout << eth::kEnvironmentHelp;
      return false;
    }
    if (grad_sync != "block" && grad_sync != "per-layer" && grad_sync != "flat")
      throw eth::InputError("--grad-sync: value: expected block, per-layer or flat, got " + grad_sync);
    o.grad_sync = grad_sync == "block"       ? eth::GradSyncMode::block
                  : grad_sync == "per-layer" ? eth::GradSyncMode::per_layer
                                             : eth::GradSyncMode::flat;
    try {
      o.precision = eth::kernels::parse_precision(precision);
    } catch (const std::invalid_argument& e) {
      throw eth::InputError(std::string("--precision: value: ") + e.what());
    }
    if (!fault.empty()) o.fault = eth::parse_fault(fault);
    for (const std::string& text : slowdowns) o.slowdowns.push_back(eth::parse_slowdown(text));
  } catch (const eth::InputError& e) {
    throw eth::AgreedError(e.what());
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const eth::Environment environment = eth::read_environment();
  eth::kernels::bind_gpu_before_mpi(environment.device);  // MPI's transports may create their CUDA context in MPI_Init
  eth::MpiSession mpi(&argc, &argv, environment.comm);
  try {
    eth::TrainOptions options;
    options.device = environment.device;
    options.comm = environment.comm;
    options.tokenizer_dir = ETH_TOKENIZER_DIR;
    if (!parse_options(argc, argv, options, mpi.rank() == 0)) return 0;
    mpi.share_cores_among_local_ranks();
    eth::Job job = eth::load_job(options, std::cout);
    // The backend of this rank's device type's precision path (ETH_BF16_KERNELS=0 taking it to
    // fp32 arithmetic). A bad setting or a missing GPU may differ between hosts: agreed, so every
    // rank ends.
    eth::kernels::BackendChoice choice;
    std::string error;
    try {
      const eth::kernels::PrecisionPath path = eth::kernels::rank_path(
          job.precision.of_rank(job.topology, mpi.rank()), job.topology.device_of(mpi.rank()).rates(), options.device);
      choice = eth::kernels::select_backend(mpi.local_rank(), mpi.local_ranks(), path, options.device);
      if (const std::string aware = eth::mpi_cuda_aware_error(options.comm); !aware.empty())
        throw std::invalid_argument("device " + choice.backend->name() + ": " + aware);
    } catch (const std::invalid_argument& e) {
      error = "rank " + std::to_string(mpi.rank()) + " on " + mpi.host() + ": " + e.what();
    }
    if (const std::string agreed = eth::agreed_error(error); !agreed.empty()) throw eth::AgreedError(agreed);
    if (mpi.rank() == 0) std::cout << choice.note << '\n';
    eth::train(job, *choice.backend, std::cout);
  } catch (const eth::AgreedError& e) {
    // Every rank raised it together: one line, every rank exits non-zero, nobody hangs.
    if (mpi.rank() == 0) std::cerr << "eth_train: error: " << e.what() << '\n';
    return 1;
  } catch (const std::exception& e) {
    // One rank alone: its message and where it was, then the whole job ends rather than waiting on it.
    std::cerr << "eth_train: rank " << mpi.rank() << " (" << eth::progress_text() << "): " << e.what() << std::endl;
    MPI_Abort(eth::world_comm(), 1);
  }
  return 0;
}

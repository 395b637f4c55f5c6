// eth_profile: measures this machine's backend with the project's kernels for a model (or, with
// --estimate-topology, writes roofline estimates for a topology's device types); see
// docs/planner.md. Under mpirun every rank measures at once, as the node is loaded in training.
#include <boost/program_options.hpp>

#include <iostream>
#include <stdexcept>

#include "app/environment.hpp"
#include "kernels/backend_select.hpp"
#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/planner/profile_tool.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  const eth::Environment environment = eth::read_environment();
  eth::kernels::bind_gpu_before_mpi(environment.device);  // the GPU eth_train would use, current before MPI_Init
  eth::MpiSession mpi(&argc, &argv, environment.comm);
  eth::planner::ProfileToolOptions o;
  o.device = environment.device;
  std::string precision = "auto";
  po::options_description desc("eth_profile options");
  desc.add_options()
      ("help,h", "print this help")
      ("model", po::value(&o.model), "model YAML")
      ("device-type", po::value(&o.device_type)->default_value(o.device_type), "device type name the profile is for")
      ("micro-batches", po::value(&o.micro_batches)->multitoken(), "micro-batch sizes (default 1 2 4 8)")
      ("seq-len", po::value(&o.seq_len)->default_value(o.seq_len), "tokens per sample, T")
      ("repetitions", po::value(&o.repetitions)->default_value(o.repetitions), "timed runs per measurement, back to back")
      ("out", po::value(&o.out), "profile file (default OUT_DIR/<device>-<model>-T<seq>.yaml)")
      ("out-dir", po::value(&o.out_dir)->default_value(o.out_dir), "where profiles are written")
      ("estimate-topology", po::value(&o.estimate_topology), "write roofline estimates for this topology's device types")
      ("precision", po::value(&precision)->default_value(precision),
       "auto (bf16 on a device with bf16 units, else fp32), fp32, tf32 or bf16: what it measures at, as eth_train "
       "--precision; the profile records the path (precision and arithmetic)");
  try {
    if (!eth::parse_command_line(argc, argv, desc, mpi.rank() == 0)) return 0;
    try {
      o.precision = eth::kernels::parse_precision(precision);
    } catch (const std::invalid_argument& e) {
      throw eth::InputError(std::string("--precision: value: ") + e.what());
    }
    mpi.share_cores_among_local_ranks();
    o.local_rank = mpi.local_rank();
    o.local_ranks = mpi.local_ranks();
    eth::planner::run_profile_tool(o, eth::world_comm(), std::cout);
  } catch (const eth::InputError& e) {
    if (mpi.rank() == 0) std::cerr << "eth_profile: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

// eth_topo: run under mpirun or srun with one rank per device; rank 0 writes the topology YAML.
#include <boost/program_options.hpp>

#include <iostream>
#include <string>
#include <vector>

#include "app/environment.hpp"
#include "kernels/backend_select.hpp"
#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/job/topology_discovery.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  const eth::Environment environment = eth::read_environment();
  eth::kernels::bind_gpu_before_mpi(environment.device);
  eth::MpiSession mpi(&argc, &argv, environment.comm);
  std::string output;
  eth::DiscoveryOptions o;
  o.device = environment.device;
  po::options_description desc("eth_topo options");
  desc.add_options()
      ("help,h", "print this help")
      ("output,o", po::value(&output)->default_value("topology.yaml"), "where rank 0 writes the topology")
      ("network-gbs", po::value(&o.network.bandwidth_gbs)->default_value(o.network.bandwidth_gbs), "inter-node GB/s")
      ("network-latency-us", po::value(&o.network.latency_us)->default_value(o.network.latency_us), "inter-node latency")
      ("network-kind", po::value(&o.network.kind)->default_value(o.network.kind), "inter-node link kind")
      ("gpu-link-kind", po::value(&o.intra_node_gpu.kind)->default_value(o.intra_node_gpu.kind), "GPU-to-GPU link in a node")
      ("gpu-link-gbs", po::value(&o.intra_node_gpu.bandwidth_gbs)->default_value(o.intra_node_gpu.bandwidth_gbs), "its GB/s");
  try {
    if (!eth::parse_command_line(argc, argv, desc, mpi.rank() == 0)) return 0;
    std::vector<std::string> rank_devices;
    const eth::Topology topo = eth::discover_topology(o, &rank_devices);
    if (mpi.rank() == 0) {
      eth::save_topology(topo, output);
      for (const std::string& line : rank_devices) std::cout << "eth_topo: " << line << '\n';
      std::cout << "eth_topo: " << topo.world_size() << " ranks on " << topo.nodes.size() << " node(s), "
                << topo.device_types.size() << " device type(s): wrote " << output << '\n';
    }
  } catch (const eth::InputError& e) {
    // Raised by every rank alike (the command line) or by rank 0 alone (placement, writing).
    if (mpi.rank() == 0) std::cerr << "eth_topo: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

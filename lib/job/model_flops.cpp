#include "lib/job/model_flops.hpp"

namespace eth {

double peak_flops(const Topology& topology, const PrecisionPaths& paths) {
  double tflops = 0;
  for (int r = 0; r < topology.world_size(); r++) tflops += paths.of_rank(topology, r).peak_tflops;
  return tflops * 1e12;
}

}  // namespace eth

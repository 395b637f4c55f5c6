#include "lib/job/model_flops.hpp"

namespace eth {

double flop_parameters(const GptConfig& m) {
  const double C = m.channels, L = m.num_layers;
  return L * (12.0 * C * C + 13.0 * C) + static_cast<double>(m.padded_vocab_size) * C + 2.0 * C;
}

double training_flops_per_token(const GptConfig& m, int T) {
  return 6.0 * flop_parameters(m) + 12.0 * m.num_layers * T * static_cast<double>(m.channels);
}

double peak_flops(const Topology& topology, const PrecisionPaths& paths) {
  double tflops = 0;
  for (int r = 0; r < topology.world_size(); r++) tflops += paths.of_rank(topology, r).peak_tflops;
  return tflops * 1e12;
}

}  // namespace eth

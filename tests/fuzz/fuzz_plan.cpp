// Plan YAML (docs/formats.md, "Plan"): parsed, then validated against the 4-rank test cluster and
// the tiny-4l model, which is where a plan's indices and counts meet the arrays they index.
#include "lib/model/model_config.hpp"
#include "lib/plan/plan.hpp"
#include "lib/plan/plan_validation.hpp"
#include "lib/plan/topology.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const eth::Topology topology = eth::load_topology(ETH_SOURCE_DIR "/tests/mpi/plans/cpu-2nodes-4.yaml");
  static const eth::ModelConfig model = eth::load_model_config(ETH_SOURCE_DIR "/inputs/models/tiny-4l.yaml");
  return eth::fuzz::parse_text(data, size, [](const std::string& text) {
    eth::validate_plan(eth::plan_from_yaml(text, "fuzz"), topology, model);
  });
}

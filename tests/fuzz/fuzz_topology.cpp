// Topology YAML (docs/formats.md, "Topology"): parsed and checked.
#include "lib/plan/topology.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return eth::fuzz::parse_text(data, size, [](const std::string& text) { eth::topology_from_yaml(text, "fuzz"); });
}

// Profile YAML (docs/formats.md, "Profile").
#include "lib/planner/profile.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return eth::fuzz::parse_file(data, size, [](const std::string& path) { eth::planner::load_profile(path); });
}

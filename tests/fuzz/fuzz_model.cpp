// Model YAML (docs/formats.md, "Model").
#include "lib/model/model_config.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return eth::fuzz::parse_file(data, size, [](const std::string& path) { eth::load_model_config(path); });
}

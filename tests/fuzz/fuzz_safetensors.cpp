// safetensors files as eth_convert --import-hf reads them (lib/io/safetensors.hpp): the header
// checked against the file, then every tensor read as floats in its own shape, which must be
// either an InputError or exactly the elements the header promised. The seeds are a small valid
// file (two F32 tensors and a BF16 one, with __metadata__) and one of an F16 scalar and an empty
// tensor.
#include "lib/io/safetensors.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return eth::fuzz::parse_file(data, size, [](const std::string& path) {
    eth::SafetensorsReader file(path);
    for (const auto& [name, entry] : file.entries()) {
      if (entry.dtype != "F32" && entry.dtype != "F16" && entry.dtype != "BF16") continue;
      const std::vector<float> values = file.read(name, entry.shape);
      if (values.size() != entry.numel()) __builtin_trap();
    }
  });
}

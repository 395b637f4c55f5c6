// Checkpoint files as --resume checks them (lib/io/checkpoint_files.hpp): the input is the seal (the
// first 17 bytes, "%016x\n") and the file. A file reaches HDF5 only when it matches its seal,
// since HDF5 itself can crash on damaged files; so what is fuzzed is that gate, which must turn
// every damaged pair into one clear error. The seed is a sealed checkpoint of a 1-layer micro
// model (a few KB).
#include "lib/io/checkpoint_files.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const eth::ModelConfig model = eth::gpt2_config("fuzz-micro", 8, 8, 4, 1, 1, 4);
  constexpr size_t kSeal = 17;
  const size_t seal = size < kSeal ? size : kSeal;
  return eth::fuzz::parse_file(data + seal, size - seal, [&](const std::string& path) {
    std::ofstream(path + ".checksum", std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), seal);
    eth::verify_sealed_checkpoint(path, model);
  });
}

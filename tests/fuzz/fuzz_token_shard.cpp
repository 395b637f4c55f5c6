// Token shards (llm.c's formats: 256 int32 header, then uint16 or uint32 tokens), checked against GPT-2's
// vocabulary.
#include "lib/io/token_data.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return eth::fuzz::parse_file(data, size, [](const std::string& path) { eth::load_token_shard(path, 50257); });
}

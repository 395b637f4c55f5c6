// Hugging Face tokenizer.json files (lib/io/hf_tokenizer.hpp): a file read whole either is one
// InputError or a tokenizer whose encoder gives every document a token or more, each below its
// vocabulary's size.
#include "lib/io/hf_tokenizer.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return eth::fuzz::parse_file(data, size, [](const std::string& path) {
    const auto tokenizer = eth::open_hf_tokenizer(path);
    const auto encoder = tokenizer->encoder();
    const std::string text = "Hello, wörld! 12345 \xF0\x9F\x91\x8B\n\tit's";
    std::vector<uint32_t> ids;
    encoder->encode(text, 0, text.size(), ids);
    if (ids.empty() || tokenizer->begin_of_text() >= tokenizer->vocab_size()) __builtin_trap();
    for (uint32_t id : ids)
      if (id >= tokenizer->vocab_size()) __builtin_trap();
  });
}

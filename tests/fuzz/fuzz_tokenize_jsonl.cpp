// eth_tokenize's JSON Lines input (lib/io/tokenize_corpus.hpp, --jsonl-field text): the lines
// parsed, each document's text (invalid UTF-8 repaired) pre-tokenized and encoded with GPT-2's
// BPE (inputs/tokenizer, loaded once), every id within the vocabulary. The seeds are a few lines
// of English, of escapes and of broken UTF-8.
#include "lib/io/gpt2_bpe.hpp"
#include "lib/io/tokenize_corpus.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const eth::Gpt2Bpe bpe(ETH_SOURCE_DIR "/inputs/tokenizer");
  return eth::fuzz::parse_file(data, size, [](const std::string& path) {
    std::vector<std::string> docs;
    eth::read_documents(path, "text", docs);
    eth::Gpt2Encoder encoder(bpe);
    std::vector<uint16_t> ids;
    for (const std::string& doc : docs) {
      ids.clear();
      encoder.encode(doc, 0, doc.size(), ids);
      for (uint16_t id : ids)
        if (id > eth::kEndOfText) __builtin_trap();
      if (ids.empty()) __builtin_trap();  // a non-empty document has at least one token
    }
  });
}

// eth_tokenize's work: text in, llm.c token shards out. Each plain-text input, or each line of a
// JSON Lines input, is one document; every document is preceded by the tokenizer's
// beginning-of-text token (GPT-2's built-in BPE: the end-of-text token 50256), as in llm.c. With
// GPT-2's built-in BPE the tokens equal the reference encoder's (npm gpt-3-encoder's encode()) on
// the text as Node reads it (invalid UTF-8 becomes U+FFFD); with a tokenizer.json, Hugging Face's
// tokenizers.js's: docs/formats.md, "eth_tokenize".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace eth {

struct TokenizeOptions {
  std::vector<std::string> inputs;
  std::string jsonl_field;    // empty: each input is one plain-text document; else JSON Lines
  std::string output;         // OUT.bin
  std::string val_output;     // empty: no validation split
  double val_fraction = 0;    // the last round(F x documents) documents go to val_output
  uint64_t shard_tokens = 0;  // 0: one file per output; else OUT_000000.bin, ... of at most N tokens
  std::string tokenizer;      // a folder with GPT-2's encoder.json and vocab.bpe, or a tokenizer.json
  int token_bits = 0;         // 16 or 32: the shard layout; 0: 32 where the vocabulary passes 65,536 ids
};

// Appends the documents of one input to `docs`: the whole text (field empty), or the string
// `field` of each JSON Lines line that is not blank; invalid UTF-8 becomes U+FFFD first. An
// InputError names the file, line and field of anything else.
void read_documents(const std::string& path, const std::string& field, std::vector<std::string>& docs);

// Encodes every document on all cores (OpenMP), with a progress bar on stderr, and writes the
// shards, all or none. Returns one line per file written, saying what went where. An InputError
// names the input (and line and field) or the output that is wrong.
std::vector<std::string> tokenize_corpus(const TokenizeOptions& options);

}  // namespace eth

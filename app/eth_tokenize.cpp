// eth_tokenize: text files or JSON Lines to llm.c token shards, with GPT-2's tokenizer or a
// model's tokenizer.json (lib/io/tokenize_corpus.hpp).
//   eth_tokenize book1.txt book2.txt -o train.bin --val-fraction 0.1 --val-output val.bin
//   eth_tokenize corpus.jsonl --jsonl-field text -o corpus.bin --shard-tokens 100000000
//   eth_tokenize book.txt --tokenizer llama3/tokenizer.json -o book.bin
#include <boost/program_options.hpp>

#include <iostream>

#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/io/tokenize_corpus.hpp"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  eth::TokenizeOptions o;
  o.tokenizer = ETH_TOKENIZER_DIR;
  po::options_description desc(
      "eth_tokenize INPUT... -o OUT.bin: the tokens of every input, each one document preceded by the\n"
      "tokenizer's beginning-of-text token (GPT-2's built-in BPE: end-of-text 50256), as one llm.c shard\n"
      "(all cores: OMP_NUM_THREADS). Options");
  desc.add_options()
      ("help,h", "print this help")
      ("input", po::value(&o.inputs)->multitoken()->required()->value_name("FILE"), "the inputs, also given bare: plain-text files (or JSON Lines: --jsonl-field)")
      ("output,o", po::value(&o.output)->required()->value_name("OUT.bin"), "the shard written")
      ("jsonl-field", po::value(&o.jsonl_field)->value_name("NAME"),
       "read the inputs as JSON Lines: each line's string field NAME is one document (blank lines skipped)")
      ("val-fraction", po::value(&o.val_fraction)->value_name("F"),
       "put the last round(F x documents) documents, in input order, in --val-output (at least one each side)")
      ("val-output", po::value(&o.val_output)->value_name("VAL.bin"), "the validation shard")
      ("shard-tokens", po::value(&o.shard_tokens)->value_name("N"),
       "split each output into shards of at most N tokens named as llm.c does: OUT.bin becomes OUT_000000.bin,\n"
       "OUT_000001.bin, ... (a document may straddle two; the last holds the rest)")
      ("tokenizer", po::value(&o.tokenizer)->default_value(o.tokenizer)->value_name("DIR|FILE.json"),
       "a folder: GPT-2's BPE from its encoder.json and vocab.bpe; a file named *.json: a Hugging Face\n"
       "tokenizer.json (byte-level BPE as Llama 3, GPT-2, Qwen2 have it, or SentencePiece-style BPE with byte\n"
       "fallback as Llama 2 has it), each document after its beginning-of-text token (the post-processor's, or\n"
       "the added token <|begin_of_text|>, <s> or <|endoftext|>); special-token text in a document is plain text")
      ("token-bits", po::value(&o.token_bits)->value_name("16|32"),
       "token ids as uint16 (llm.c's GPT-2 layout: magic 20240520, version 1) or uint32 (its Llama 3 layout:\n"
       "20240801, version 7); default 32 where the vocabulary passes 65,536 ids, else 16");
  po::positional_options_description positional;
  positional.add("input", -1);
  try {
    if (!eth::parse_command_line(argc, argv, desc, true, &positional)) return 0;
    for (const std::string& line : eth::tokenize_corpus(o)) std::cout << "eth_tokenize: wrote " << line << '\n';
  } catch (const eth::InputError& e) {
    std::cerr << "eth_tokenize: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

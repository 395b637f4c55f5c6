// eth_tokenize: text files or JSON Lines to llm.c token shards, with GPT-2's tokenizer
// (lib/io/tokenize_corpus.hpp).
//   eth_tokenize book1.txt book2.txt -o train.bin --val-fraction 0.1 --val-output val.bin
//   eth_tokenize corpus.jsonl --jsonl-field text -o corpus.bin --shard-tokens 100000000
#include <boost/program_options.hpp>

#include <iostream>

#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/io/tokenize_corpus.hpp"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  eth::TokenizeOptions o;
  o.tokenizer_dir = ETH_TOKENIZER_DIR;
  po::options_description desc(
      "eth_tokenize INPUT... -o OUT.bin: GPT-2 tokens of every input, each one document preceded by the\n"
      "end-of-text token 50256, as one llm.c shard (all cores: OMP_NUM_THREADS). Options");
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
      ("tokenizer", po::value(&o.tokenizer_dir)->default_value(o.tokenizer_dir)->value_name("DIR"),
       "folder with GPT-2's encoder.json and vocab.bpe");
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

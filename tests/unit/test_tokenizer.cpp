// eth_tokenize's library (lib/io/tokenize_corpus.hpp): its tokens equal the reference encoder's
// (npm gpt-3-encoder 1.1.4) on the corpus of tests/unit/data/tokenizer, whose .tokens files that
// encoder wrote (make_reference.mjs there says how); a document cut into pieces for the threads
// encodes as a whole; the split and the shard names; and every bad input ends in one clear line
// with nothing written.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/io/gpt2_bpe.hpp"
#include "lib/io/token_data.hpp"
#include "lib/io/tokenize_corpus.hpp"
#include "tests/unit/expect_input_error.hpp"
#include "tests/unit/scratch_dir_test.hpp"

namespace eth::test {
namespace {

const std::string kCorpus = "tests/unit/data/tokenizer/";
const std::string kTokenizer = "inputs/tokenizer";

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::vector<uint16_t> read_shard(const std::string& path) {
  const TokenShard shard = load_token_shard(path, 50257);
  const std::string bytes = read_bytes(path);
  std::vector<uint16_t> tokens(shard.tokens);
  std::memcpy(tokens.data(), bytes.data() + kShardHeaderInts * sizeof(int32_t), tokens.size() * sizeof(uint16_t));
  return tokens;
}

// The reference's documents, each after the end-of-text token, end to end.
std::vector<uint16_t> reference_tokens(const std::string& name) {
  std::vector<uint16_t> tokens;
  std::istringstream lines(read_bytes(kCorpus + name + ".tokens"));
  for (std::string line; std::getline(lines, line);) {
    tokens.push_back(kEndOfText);
    std::istringstream ids(line);
    for (int id; ids >> id;) tokens.push_back(static_cast<uint16_t>(id));
  }
  return tokens;
}

// Equal, or the first difference with its neighbourhood.
void expect_same_tokens(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want, const std::string& what) {
  const auto [g, w] = std::mismatch(got.begin(), got.end(), want.begin(), want.end());
  if (g == got.end() && w == want.end()) return;
  const size_t at = static_cast<size_t>(g - got.begin());
  const auto around = [&](const std::vector<uint16_t>& v) {
    std::string s;
    for (size_t i = at >= 5 ? at - 5 : 0; i < std::min(v.size(), at + 6); i++) s += (i == at ? " [" : " ") + std::to_string(v[i]) + (i == at ? "]" : "");
    return s;
  };
  ADD_FAILURE() << what << ": " << got.size() << " tokens, the reference " << want.size() << "; first difference at token "
                << at << ":\n  ours:     " << around(got) << "\n  reference:" << around(want);
}

class Tokenizer : public ScratchDirTest {
 protected:
  TokenizeOptions options(std::vector<std::string> inputs) const {
    TokenizeOptions o;
    o.inputs = std::move(inputs);
    o.output = path("out.bin");
    o.tokenizer = kTokenizer;
    return o;
  }
  // What the scratch folder holds besides the inputs the test wrote: after an error, nothing.
  std::vector<std::string> outputs() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_))
      if (entry.path().filename().string().starts_with("out")) names.push_back(entry.path().filename().string());
    return names;
  }
};

TEST_F(Tokenizer, MatchesTheReferenceEncoder) {
  for (const std::string name : {"scripts", "invalid_utf8", "random_text", "random_bytes"}) {
    tokenize_corpus(options({kCorpus + name + ".txt"}));
    expect_same_tokens(read_shard(path("out.bin")), reference_tokens(name), name + ".txt");
  }
  TokenizeOptions jsonl = options({kCorpus + "docs.jsonl"});
  jsonl.jsonl_field = "text";
  tokenize_corpus(jsonl);
  expect_same_tokens(read_shard(path("out.bin")), reference_tokens("docs"), "docs.jsonl");
}

// A document longer than a piece is cut at safe boundaries and encoded on several threads; the
// tokens are those of the whole text encoded at once.
TEST_F(Tokenizer, PiecesEncodeAsTheWholeDocument) {
  std::string text;
  for (int i = 0; i < 12; i++) text += read_bytes(kCorpus + "random_text.txt") + read_bytes(kCorpus + "scripts.txt");
  const std::string input = write_text("long.txt", text);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  tokenize_corpus(options({input}));
  omp_set_num_threads(threads);

  const Gpt2Bpe bpe(kTokenizer);
  Gpt2Encoder encoder(bpe);
  std::vector<uint16_t> whole = {kEndOfText};
  encoder.encode(text, 0, text.size(), whole);
  expect_same_tokens(read_shard(path("out.bin")), whole, "long.txt");
}

TEST_F(Tokenizer, SplitsByDocumentsAndNamesShardsAsLlmc) {
  std::vector<std::string> inputs;
  for (const std::string word : {"one", "two", "three", "four", "five"}) inputs.push_back(write_text(word + ".txt", word));
  TokenizeOptions o = options(inputs);
  o.val_output = path("out_val.bin");
  o.val_fraction = 0.4;  // the last 2 of 5
  const std::vector<std::string> report = tokenize_corpus(o);
  ASSERT_EQ(report.size(), 2u);
  EXPECT_NE(report[0].find("documents 1-3 of 5"), std::string::npos) << report[0];
  EXPECT_NE(report[1].find("documents 4-5 of 5"), std::string::npos) << report[1];
  const std::vector<uint16_t> train = read_shard(path("out.bin")), val = read_shard(path("out_val.bin"));
  EXPECT_EQ(std::count(train.begin(), train.end(), kEndOfText), 3);
  EXPECT_EQ(std::count(val.begin(), val.end(), kEndOfText), 2);

  o.val_output.clear(), o.val_fraction = 0;
  o.output = path("out_sharded.bin");
  o.shard_tokens = 3;
  tokenize_corpus(o);
  std::vector<uint16_t> joined;
  for (int i = 0; std::filesystem::exists(path("out_sharded_00000" + std::to_string(i) + ".bin")); i++) {
    const std::vector<uint16_t> shard = read_shard(path("out_sharded_00000" + std::to_string(i) + ".bin"));
    EXPECT_LE(shard.size(), 3u);
    joined.insert(joined.end(), shard.begin(), shard.end());
  }
  std::vector<uint16_t> all = train;
  all.insert(all.end(), val.begin(), val.end());
  expect_same_tokens(joined, all, "the shards end to end");
}

TEST_F(Tokenizer, BadInputsNameTheFileAndWriteNothing) {
  const std::string empty = write_text("empty.txt", "");
  expect_input_error([&] { tokenize_corpus(options({empty})); }, {empty, "non-empty", "an empty file"});
  const std::string missing = path("missing.txt");
  expect_input_error([&] { tokenize_corpus(options({missing})); }, {missing, "No such file or directory"});
  expect_input_error([&] { tokenize_corpus(options({dir_.string()})); }, {dir_.string(), "Is a directory"});

  const auto jsonl = [&](const std::string& text) {
    TokenizeOptions o = options({write_text("in.jsonl", text)});
    o.jsonl_field = "text";
    return o;
  };
  const std::string in = path("in.jsonl");
  expect_input_error([&] { tokenize_corpus(jsonl("{\"text\": \"a\"}\n{\"text\": oops}\n")); },
                     {in + ": line 2", "JSON", "one JSON object per line", "parse error"});
  expect_input_error([&] { tokenize_corpus(jsonl("\n{\"body\": \"a\"}\n")); }, {in + ": line 2", "field \"text\"", "no such field"});
  expect_input_error([&] { tokenize_corpus(jsonl("{\"text\": 7}")); }, {in + ": line 1", "field \"text\"", "a string", "number"});
  expect_input_error([&] { tokenize_corpus(jsonl("[\"text\"]")); }, {in + ": line 1", "an object", "array"});
  expect_input_error([&] { tokenize_corpus(jsonl("{\"text\": \"\"}")); }, {in + ": line 1", "a non-empty string"});
  expect_input_error([&] { tokenize_corpus(jsonl("\n \r\n")); }, {in, "at least one JSON line", "none"});

  const std::string text = write_text("text.txt", "some text");
  TokenizeOptions full = options({text});
  full.output = "/dev/full";
  expect_input_error([&] { tokenize_corpus(full); }, {"/dev/full", "write", "No space left on device"});
  TokenizeOptions no_folder = options({text});
  no_folder.output = path("out_missing/out.bin");
  expect_input_error([&] { tokenize_corpus(no_folder); }, {no_folder.output, "No such file or directory"});
  // The training shard is written before the validation one fails: neither is left.
  TokenizeOptions late = options({text, write_text("text2.txt", "more text")});
  late.val_output = "/dev/full", late.val_fraction = 0.5;
  expect_input_error([&] { tokenize_corpus(late); }, {"/dev/full", "No space left on device"});
  TokenizeOptions half = options({text});
  half.val_output = path("out_val.bin");
  expect_input_error([&] { tokenize_corpus(half); }, {"--val-fraction", "between 0 and 1"});
  EXPECT_EQ(outputs(), std::vector<std::string>{}) << "files left behind by failed runs";
}

}  // namespace
}  // namespace eth::test

// The hand-written Split matchers of tokenizer.json files (lib/io/split_patterns.hpp) against
// Hugging Face's tokenizers.js: the pre-tokens of Llama 3's, Qwen2's and GPT-2's patterns over
// varied texts (tests/tokenizer/texts) and the GPT-2 test corpus's random and multi-script text
// equal those tokenizers.js cut (tests/unit/data/tokenizer/split_patterns.json, written by
// tests/tokenizer/make_split_reference.mjs); every place split_safe_cut allows is a boundary of
// them; and BpeMerges applies the lowest rank first, the leftmost of equal ones.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lib/io/bpe_merges.hpp"
#include "lib/io/split_patterns.hpp"

namespace eth::test {
namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

const std::pair<const char*, SplitPattern> kPatterns[] = {
    {"llama3", SplitPattern::kLlama3}, {"qwen2", SplitPattern::kQwen2}, {"gpt2", SplitPattern::kGpt2}};

// The lengths of the pre-tokens the matcher cuts `text` into, from its start.
std::vector<size_t> pretoken_lengths(SplitPattern pattern, std::string_view text) {
  std::vector<size_t> lengths;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = split_match_end(pattern, text, pos);
    lengths.push_back(end - pos);
    pos = end;
  }
  return lengths;
}

TEST(SplitPatterns, MatchTokenizersJs) {
  const nlohmann::json reference = nlohmann::json::parse(read_bytes("tests/unit/data/tokenizer/split_patterns.json"));
  for (const auto& [name, pattern] : kPatterns) {
    ASSERT_TRUE(reference.contains(name));
    for (const auto& [file, want_json] : reference[name].items()) {
      const std::string text = read_bytes(file);
      ASSERT_FALSE(text.empty()) << file;
      const auto want = want_json.get<std::vector<size_t>>();
      const std::vector<size_t> got = pretoken_lengths(pattern, text);
      size_t at = 0, offset = 0;
      while (at < got.size() && at < want.size() && got[at] == want[at]) offset += got[at++];
      if (at == got.size() && at == want.size()) continue;
      ADD_FAILURE() << name << " on " << file << ": " << got.size() << " pre-tokens, tokenizers.js " << want.size()
                    << "; pre-token " << at << " at byte " << offset << ": ours "
                    << (at < got.size() ? "\"" + text.substr(offset, got[at]) + "\"" : "none") << ", tokenizers.js "
                    << (at < want.size() ? "\"" + text.substr(offset, want[at]) + "\"" : "none");
    }
  }
}

// A document is cut for the threads only where split_safe_cut holds: each such place must be a
// pre-token boundary of the whole text, or its pieces would encode differently.
TEST(SplitPatterns, SafeCutsAreBoundaries) {
  std::string text = read_bytes("tests/unit/data/tokenizer/random_text.txt");
  for (const char* name : {"spaces", "mixed", "scripts", "digits"}) text += read_bytes("tests/tokenizer/texts/" + std::string(name) + ".txt");
  for (const auto& [name, pattern] : kPatterns) {
    std::vector<bool> boundary(text.size() + 1, false);
    size_t pos = 0;
    for (const size_t length : pretoken_lengths(pattern, text)) boundary[pos += length] = true;
    int cuts = 0;
    for (size_t p = 1; p < text.size(); p++) {
      if (!split_safe_cut(pattern, text, p)) continue;
      cuts++;
      EXPECT_TRUE(boundary[p]) << name << ": a safe cut at byte " << p << " inside a pre-token: \""
                               << text.substr(p >= 10 ? p - 10 : 0, 20) << "\"";
    }
    EXPECT_GT(cuts, 100) << name;  // the text has newlines before ASCII often enough
  }
}

TEST(SplitPatterns, RecognisedByTheirExactString) {
  EXPECT_EQ(recognise_split_pattern(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"),
            SplitPattern::kGpt2);
  EXPECT_FALSE(recognise_split_pattern(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))"));
  EXPECT_FALSE(recognise_split_pattern(R"(\p{N}{1,3})"));
}

// Ids: 1 "a", 2 "b", 3 "aa", 4 "ab", 5 "aab". Ranks: (a, b) 0, (a, a) 1, (aa, b) 2.
TEST(BpeMerges, LowestRankFirstLeftmostAmongEquals) {
  BpeMerges merges;
  merges.add(1, 2, 4, 0);
  merges.add(1, 1, 3, 1);
  merges.add(3, 2, 5, 2);
  std::vector<uint32_t> word = {1, 1, 2};  // "aab": (a, b) outranks (a, a), so a + ab, not aa + b
  merges.merge(word);
  EXPECT_EQ(word, (std::vector<uint32_t>{1, 4}));
  word = {1, 1, 1};  // "aaa": the leftmost (a, a) first
  merges.merge(word);
  EXPECT_EQ(word, (std::vector<uint32_t>{3, 1}));
  word = {1, 1, 1, 1, 2};  // "aaaab": ab, then aa at 0: aa a ab
  merges.merge(word);
  EXPECT_EQ(word, (std::vector<uint32_t>{3, 1, 4}));
  word = {2};
  merges.merge(word);
  EXPECT_EQ(word, (std::vector<uint32_t>{2}));
}

}  // namespace
}  // namespace eth::test

#include "lib/io/gpt2_bpe.hpp"

#include <sstream>

#include <nlohmann/json.hpp>

#include "lib/base/input_error.hpp"
#include "lib/base/read_file.hpp"
#include "lib/io/gpt2_pretokenizer.hpp"

namespace eth {
namespace {

constexpr size_t kVocabSize = 50257;
constexpr size_t kMerges = 50000;

}  // namespace

// GPT-2's bytes_to_unicode(): the printable Latin-1 bytes stand for themselves, the others
// (controls, space, 0x7F-0xA0, 0xAD) for U+0100 onwards in byte order. As UTF-8.
std::string byte_stand_in(int byte) {
  const auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; };
  int cp = byte;
  if (!printable(byte)) {
    cp = 256;
    for (int b = 0; b < byte; b++) cp += !printable(b);
  }
  std::string utf8;
  if (cp < 0x80) utf8 += static_cast<char>(cp);
  else utf8 += {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
  return utf8;
}

Gpt2Bpe::Gpt2Bpe(const std::string& dir) {
  const std::string encoder_path = dir + "/encoder.json", merges_path = dir + "/vocab.bpe";
  std::unordered_map<std::string, uint16_t> ids(2 * kVocabSize);
  try {
    const nlohmann::json encoder = nlohmann::json::parse(read_file(encoder_path, "GPT-2's encoder.json"));
    for (const auto& [token, id] : encoder.items()) {
      const auto value = id.get<int64_t>();
      if (value < 0 || value >= int64_t(kVocabSize))
        fail_input(encoder_path, "\"" + token + "\"", "an id below " + std::to_string(kVocabSize), std::to_string(value));
      ids[token] = static_cast<uint16_t>(value);
    }
  } catch (const nlohmann::json::exception& e) {
    fail_input(encoder_path, "content", "a JSON object of token -> id", e.what());
  }
  if (ids.size() != kVocabSize)
    fail_input(encoder_path, "entries", std::to_string(kVocabSize), std::to_string(ids.size()));
  const auto id_of = [&](const std::string& token, int line_no) {
    const auto it = ids.find(token);
    if (it == ids.end())
      fail_input(line_no ? merges_path : encoder_path, line_no ? "line " + std::to_string(line_no) : "bytes",
                 "a token of encoder.json", "\"" + token + "\"");
    return it->second;
  };
  for (int b = 0; b < 256; b++) byte_token_[b] = id_of(byte_stand_in(b), 0);
  // Each token's bytes: its string's characters are byte stand-ins, one to two UTF-8 bytes each.
  std::unordered_map<std::string, char> byte_of;
  for (int b = 0; b < 256; b++) byte_of[byte_stand_in(b)] = static_cast<char>(b);
  bytes_.resize(kVocabSize);
  for (const auto& [token, id] : ids) {
    std::string& bytes = bytes_[id];
    for (size_t i = 0; i < token.size();) {
      const size_t len = static_cast<unsigned char>(token[i]) < 0x80 ? 1 : 2;
      const auto it = byte_of.find(token.substr(i, len));
      if (it == byte_of.end()) {  // <|endoftext|>'s "<", "|" are stand-ins; nothing else is special
        fail_input(encoder_path, "\"" + token + "\"", "GPT-2's byte stand-ins (bytes_to_unicode)", "another character");
      }
      bytes += it->second;
      i += len;
    }
  }

  // The reference keys its merge table by the string `${left},${right}` (a JavaScript array
  // used as an object key), so a pair whose left and right join with a comma into the key of
  // another merge takes that merge's rank: ("\",", "\"") merges like ("\"", ",\"") does. The
  // 11 such pairs of GPT-2's vocabulary are added here, with the later merge winning a shared
  // key as in the reference. Their results are tokens too, so every symbol stays a token. (No
  // input is known where this changes the tokens: every word of up to 6 of the characters
  // "",])'.[ , with or without a leading space, encodes alike either way. It is kept because it
  // is the reference's rule.)
  std::istringstream lines(read_file(merges_path, "GPT-2's vocab.bpe"));
  std::string line;
  std::getline(lines, line);  // "#version: 0.2"
  merges_.reserve(2 * kMerges);
  int rank = 0;
  for (int line_no = 2; std::getline(lines, line); line_no++) {
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
      fail_input(merges_path, "line " + std::to_string(line_no), "two tokens separated by one space", "\"" + line + "\"");
    const std::string key = line.substr(0, space) + "," + line.substr(space + 1);
    for (size_t comma = key.find(','); comma != std::string::npos; comma = key.find(',', comma + 1)) {
      const std::string left = key.substr(0, comma), right = key.substr(comma + 1);
      if (comma != space && (!ids.count(left) || !ids.count(right))) continue;
      merges_[pair_key(id_of(left, line_no), id_of(right, line_no))] = {rank, id_of(left + right, line_no)};
    }
    rank++;
  }
  if (rank != int(kMerges)) fail_input(merges_path, "merges", std::to_string(kMerges), std::to_string(rank));
}

void Gpt2Bpe::encode(std::string_view bytes, std::vector<uint16_t>& out) const {
  std::vector<uint16_t> word(bytes.size());
  for (size_t i = 0; i < bytes.size(); i++) word[i] = byte_token_[static_cast<unsigned char>(bytes[i])];
  // As the reference does it: find the pair of lowest rank (the rightmost of equal ranks, which
  // only the comma-keyed pairs above share), merge every occurrence of it left to right, repeat.
  std::vector<uint16_t> merged;
  while (word.size() > 1) {
    const Merge* best = nullptr;
    size_t best_at = 0;
    for (size_t i = 0; i + 1 < word.size(); i++) {
      const auto it = merges_.find(pair_key(word[i], word[i + 1]));
      if (it != merges_.end() && (!best || it->second.rank <= best->rank)) best = &it->second, best_at = i;
    }
    if (!best) break;
    const uint16_t left = word[best_at], right = word[best_at + 1];
    merged.clear();
    for (size_t i = 0; i < word.size(); i++) {
      if (i + 1 < word.size() && word[i] == left && word[i + 1] == right) {
        merged.push_back(best->result);
        i++;
      } else {
        merged.push_back(word[i]);
      }
    }
    word.swap(merged);
  }
  out.insert(out.end(), word.begin(), word.end());
}

void Gpt2Encoder::encode(std::string_view text, size_t begin, size_t end, std::vector<uint16_t>& out) {
  for (size_t pos = begin; pos < end;) {
    const size_t next = pretoken_end(text, pos);
    const std::string_view piece = text.substr(pos, next - pos);
    pos = next;
    cache_.append(piece, out, [&](std::string_view bytes, std::vector<uint16_t>& ids) { bpe_.encode(bytes, ids); });
  }
}

}  // namespace eth

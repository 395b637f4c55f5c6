#include "lib/io/text_tokenizer.hpp"

#include <filesystem>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "lib/base/input_error.hpp"
#include "lib/base/read_file.hpp"
#include "lib/base/utf8.hpp"
#include "lib/io/hf_tokenizer.hpp"

namespace eth {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string_view kSpaceMark = "\xE2\x96\x81";  // "▁" (U+2581), SentencePiece's space

// A byte-level token's bytes: each character a byte's stand-in (a token of other characters, which
// byte-level vocabularies do not hold, as it is spelled).
std::string byte_level_bytes(const std::string& token, const std::unordered_map<std::string, char>& byte_of) {
  std::string bytes;
  for (size_t i = 0; i < token.size();) {
    int len = 0;
    decode_utf8(token, i, &len);
    const auto it = byte_of.find(token.substr(i, len));
    if (it == byte_of.end()) return token;
    bytes += it->second;
    i += len;
  }
  return bytes;
}

// A SentencePiece token's text: "▁" is a space (the <0xNN> byte tokens are set apart).
std::string sentencepiece_bytes(const std::string& token) {
  std::string text;
  for (size_t i = 0; i < token.size(); i++) {
    if (token.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      text += ' ';
      i += kSpaceMark.size() - 1;
    } else {
      text += token[i];
    }
  }
  return text;
}

// What each id of `t` decodes to; special tokens nothing.
std::vector<std::string> decode_table(const HfTokenizer& t) {
  std::vector<std::string> bytes(t.vocab_size);
  std::unordered_map<std::string, char> byte_of;
  for (int b = 0; b < 256; b++) byte_of[byte_stand_in(b)] = static_cast<char>(b);
  for (const auto& [token, id] : t.vocab)
    bytes[id] = t.kind == HfTokenizer::Kind::kByteLevel ? byte_level_bytes(token, byte_of) : sentencepiece_bytes(token);
  if (t.kind == HfTokenizer::Kind::kSentencePiece)
    for (int b = 0; b < 256; b++) bytes[t.byte_ids[b]] = std::string(1, static_cast<char>(b));
  for (const auto& [content, id] : t.specials) bytes[id].clear();
  return bytes;
}

// generation_config.json's eos_token_id beside the tokenizer, or else its end tokens by name.
std::vector<int32_t> read_end_tokens(const HfTokenizer& t, const std::string& tokenizer_path) {
  const fs::path config = fs::path(tokenizer_path).parent_path() / "generation_config.json";
  std::vector<int32_t> ends;
  if (fs::exists(config)) {
    json c;
    try {
      c = json::parse(read_file(config.string(), "a generation_config.json"));
    } catch (const json::exception& e) {
      fail_input(config.string(), "content", "JSON", e.what());
    }
    const json eos = c.is_object() ? c.value("eos_token_id", json()) : json();
    const std::string expected = "an id or a list of ids below the vocabulary's " + std::to_string(t.vocab_size) + " of " + tokenizer_path;
    if (!eos.is_null()) {
      for (const json& id : eos.is_array() ? eos : json::array({eos})) {
        if (!id.is_number_unsigned() || id.get<uint64_t>() >= t.vocab_size) fail_input(config.string(), "eos_token_id", expected, eos.dump());
        ends.push_back(id.get<int32_t>());
      }
      return ends;
    }
  }
  for (const char* name : {"<|end_of_text|>", "<|eot_id|>", "</s>", "<|endoftext|>", "<|im_end|>"})
    if (t.specials.count(name)) ends.push_back(static_cast<int32_t>(t.specials.at(name)));
  return ends;
}

}  // namespace

TextTokenizer::TextTokenizer(const std::string& path) {
  const std::string json_path = tokenizer_json_path(path);
  if (json_path.empty()) {
    path_ = path;
    builtin_gpt2_ = true;
    Gpt2Bpe bpe(path);
    for (uint32_t id = 0; id <= kEndOfText; id++) bytes_.push_back(bpe.bytes_of(static_cast<uint16_t>(id)));
    corpus_ = gpt2_corpus_tokenizer(std::move(bpe));
    return;
  }
  path_ = json_path;
  HfTokenizer t = read_hf_tokenizer(json_path);
  strip_first_space_ = t.kind == HfTokenizer::Kind::kSentencePiece;
  begin_first_ = t.prompt_begins;
  bytes_ = decode_table(t);
  end_tokens_ = read_end_tokens(t, json_path);
  corpus_ = hf_corpus_tokenizer(std::move(t));
}

std::vector<int32_t> TextTokenizer::encode(std::string_view text) const {
  std::vector<uint32_t> ids;
  if (begin_first_ || text.empty()) ids.push_back(corpus_->begin_of_text());
  if (!text.empty()) corpus_->encoder()->encode(text, 0, text.size(), ids);
  return {ids.begin(), ids.end()};
}

std::string_view TextTokenizer::bytes_of(int32_t id) const {
  return id >= 0 && static_cast<uint64_t>(id) < bytes_.size() ? std::string_view(bytes_[id]) : std::string_view();
}

std::string TextTokenizer::decode(const std::vector<int32_t>& tokens) const {
  std::string text;
  for (int32_t id : tokens) text += bytes_of(id);
  if (strip_first_space_ && text.starts_with(' ')) text.erase(0, 1);
  return text;
}

}  // namespace eth

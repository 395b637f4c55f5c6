#include "lib/io/hf_tokenizer.hpp"

#include <cstdio>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lib/base/input_error.hpp"
#include "lib/base/read_file.hpp"
#include "lib/io/gpt2_bpe.hpp"

namespace eth {
namespace {

using nlohmann::json;

const std::string kSpaceMark = "\xE2\x96\x81";  // "▁" (U+2581), SentencePiece's space

// A JSON member's text for messages: short values whole, long ones cut.
std::string shown(const json& value) {
  std::string text = value.dump();
  return text.size() > 160 ? text.substr(0, 160) + "..." : text;
}

// Reads the parts of a tokenizer.json, naming `path` and the component in every error.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void unsupported(const std::string& component, const std::string& implemented, const json& got) const {
    fail_input(path_, component, implemented + " (not implemented otherwise)", shown(got));
  }
  const json& member(const json& object, const std::string& key, const std::string& component) const {
    if (!object.is_object() || !object.contains(key)) fail_input(path_, component, "a member \"" + key + "\"", shown(object));
    return object[key];
  }
  std::string string_of(const json& value, const std::string& component) const {
    if (!value.is_string()) fail_input(path_, component, "a string", shown(value));
    return value.get<std::string>();
  }
  bool is_null_or_empty(const json& object, const std::string& key) const {
    return !object.contains(key) || object[key].is_null() || (object[key].is_string() && object[key].get<std::string>().empty());
  }

  void read_vocab(const json& model, HfTokenizer& t) const {
    const json& vocab = member(model, "vocab", "model");
    if (!vocab.is_object()) fail_input(path_, "model.vocab", "an object of token -> id", shown(vocab));
    t.vocab.reserve(2 * vocab.size());
    for (const auto& [token, id] : vocab.items()) {
      if (!id.is_number_unsigned() || id.get<uint64_t>() > UINT32_MAX)
        fail_input(path_, "model.vocab[\"" + token + "\"]", "an id of 0 to 2^32 - 1", shown(id));
      const auto value = id.get<uint32_t>();
      t.vocab[token] = value;
      t.vocab_size = std::max<uint64_t>(t.vocab_size, uint64_t(value) + 1);
    }
  }

  static std::optional<uint32_t> find_id(const HfTokenizer& t, std::string_view token) {
    const auto it = t.vocab.find(token);
    if (it == t.vocab.end()) return std::nullopt;
    return it->second;
  }
  uint32_t id_of(const HfTokenizer& t, const std::string& token, const std::string& component) const {
    const auto id = find_id(t, token);
    if (!id) fail_input(path_, component, "a token of model.vocab", "\"" + token + "\"");
    return *id;
  }

  // Merges in the order of their ranks; the 280,147 of Llama 3 are read without a copy of their
  // strings, and an error's component is spelled only when there is one.
  void read_merges(const json& model, HfTokenizer& t) const {
    const json& merges = member(model, "merges", "model");
    if (!merges.is_array()) fail_input(path_, "model.merges", "an array", shown(merges));
    t.merges.reserve(merges.size());
    std::string joined;
    for (size_t rank = 0; rank < merges.size(); rank++) {
      const json& m = merges[rank];
      const auto component = [&] { return "model.merges[" + std::to_string(rank) + "]"; };
      std::string_view left, right;
      if (m.is_string()) {
        const std::string_view pair = m.get_ref<const std::string&>();
        const size_t space = pair.find(' ');
        if (space == std::string_view::npos || pair.find(' ', space + 1) != std::string_view::npos)
          fail_input(path_, component(), "\"a b\": two tokens and one space", shown(m));
        left = pair.substr(0, space), right = pair.substr(space + 1);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        left = m[0].get_ref<const std::string&>(), right = m[1].get_ref<const std::string&>();
      } else {
        fail_input(path_, component(), "\"a b\" or [\"a\", \"b\"]", shown(m));
      }
      joined.assign(left).append(right);
      const auto left_id = find_id(t, left), right_id = find_id(t, right), result = find_id(t, joined);
      if (!left_id || !right_id || !result)
        fail_input(path_, component() + (left_id && right_id ? " (merged)" : ""), "a token of model.vocab",
                   "\"" + std::string(!left_id ? left : !right_id ? right : std::string_view(joined)) + "\"");
      t.merges.add(*left_id, *right_id, *result, uint32_t(rank));
    }
  }

  // First of all: a WordPiece or Unigram file is named for its model, not for what comes with it.
  void check_model_type(const json& root) const {
    const json& model = member(root, "model", "top level");
    const json& type = model.is_object() && model.contains("type") ? model["type"] : json("BPE (no \"type\")");
    if (type != "BPE") unsupported("model.type", "BPE", type);
  }

  void read_model(const json& root, HfTokenizer& t) const {
    const json& model = root["model"];
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (!is_null_or_empty(model, key)) unsupported(std::string("model.") + key, "null", model[key]);
    if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"] != 0)
      unsupported("model.dropout", "null", model["dropout"]);
    t.ignore_merges = model.value("ignore_merges", false);
    read_vocab(model, t);
    read_merges(model, t);
  }

  // normalizer null: byte-level; Sequence[Prepend "▁", Replace " " -> "▁"]: SentencePiece-style.
  void read_normalizer(const json& root, HfTokenizer& t) const {
    const json& n = root.value("normalizer", json());
    if (n.is_null()) return;
    const std::string sentencepiece = "null, or Sequence[Prepend \"▁\", Replace \" \" -> \"▁\"]";
    if (!n.is_object() || n.value("type", "") != "Sequence" || !n.contains("normalizers") || n["normalizers"].size() != 2)
      unsupported("normalizer", sentencepiece, n);
    const json &prepend = n["normalizers"][0], &replace = n["normalizers"][1];
    if (!prepend.is_object() || !replace.is_object() || prepend.value("type", "") != "Prepend" || prepend.value("prepend", "") != kSpaceMark ||
        replace.value("type", "") != "Replace" || replace.value("content", "") != kSpaceMark ||
        replace.value("pattern", json()) != json{{"String", " "}})
      unsupported("normalizer", sentencepiece, n);
    t.kind = HfTokenizer::Kind::kSentencePiece;
  }

  void require_byte_level(const json& b, const std::string& component, bool use_regex) const {
    if (!b.is_object() || b.value("type", "") != "ByteLevel" || b.value("add_prefix_space", false) || b.value("use_regex", true) != use_regex)
      unsupported(component, std::string("ByteLevel with add_prefix_space false, use_regex ") + (use_regex ? "true" : "false"), b);
  }

  void read_pre_tokenizer(const json& root, HfTokenizer& t) const {
    const json& p = root.value("pre_tokenizer", json());
    if (t.kind == HfTokenizer::Kind::kSentencePiece) {
      if (!p.is_null()) unsupported("pre_tokenizer", "null with the SentencePiece normalizer", p);
      return;
    }
    const std::string expected = "ByteLevel, or Sequence[Split (a known regex), ByteLevel without regex]";
    if (!p.is_object()) unsupported("pre_tokenizer", expected, p);
    if (p.value("type", "") == "ByteLevel") return require_byte_level(p, "pre_tokenizer", true);
    if (p.value("type", "") != "Sequence" || !p.contains("pretokenizers") || p["pretokenizers"].size() != 2)
      unsupported("pre_tokenizer", expected, p);
    const json& split = p["pretokenizers"][0];
    require_byte_level(p["pretokenizers"][1], "pre_tokenizer.pretokenizers[1]", false);
    if (!split.is_object() || split.value("type", "") != "Split" || split.value("behavior", "") != "Isolated" || split.value("invert", true))
      unsupported("pre_tokenizer.pretokenizers[0]", "Split with behavior Isolated, invert false", split);
    const json& pattern = split.value("pattern", json());
    if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string())
      unsupported("pre_tokenizer.pretokenizers[0].pattern", "a Regex", pattern);
    t.split = recognise_split_pattern(pattern["Regex"].get<std::string>());
    if (!t.split) unsupported("pre_tokenizer.pretokenizers[0].pattern.Regex", "Llama 3's, Qwen2's or GPT-2's pattern", pattern["Regex"]);
  }

  void read_byte_tokens(const json& model, HfTokenizer& t) const {
    for (int b = 0; b < 256; b++) {
      if (t.kind == HfTokenizer::Kind::kByteLevel) {
        t.byte_ids[b] = id_of(t, byte_stand_in(b), "model.vocab (the stand-in of byte " + std::to_string(b) + ")");
        continue;
      }
      if (model.value("byte_fallback", json()) != true)
        unsupported("model.byte_fallback", "true with the SentencePiece normalizer", model.value("byte_fallback", json()));
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      t.byte_ids[b] = id_of(t, name, "model.vocab (byte fallback)");
    }
  }

  // Added tokens: special ones only (they are never split out of a document's text); their ids
  // count in the vocabulary's size. Returns their ids by content.
  std::unordered_map<std::string, uint32_t> read_added_tokens(const json& root, HfTokenizer& t) const {
    std::unordered_map<std::string, uint32_t> added;
    const json& tokens = root.value("added_tokens", json::array());
    for (size_t i = 0; i < tokens.size(); i++) {
      const json& a = tokens[i];
      const std::string component = "added_tokens[" + std::to_string(i) + "]";
      if (!a.value("special", false)) unsupported(component, "a special token (non-special added tokens are not split out)", a);
      const json& id = member(a, "id", component);
      if (!id.is_number_unsigned() || id.get<uint64_t>() > UINT32_MAX) fail_input(path_, component + ".id", "an id of 0 to 2^32 - 1", shown(id));
      added[string_of(member(a, "content", component), component + ".content")] = id.get<uint32_t>();
      t.vocab_size = std::max<uint64_t>(t.vocab_size, id.get<uint64_t>() + 1);
    }
    return added;
  }

  // The post-processor's leading special token (TemplateProcessing, alone or in a Sequence).
  std::optional<uint32_t> template_bos(const json& p) const {
    if (!p.is_object()) return std::nullopt;
    if (p.value("type", "") == "Sequence") {
      for (const json& inner : p.value("processors", json::array()))
        if (const auto id = template_bos(inner)) return id;
      return std::nullopt;
    }
    if (p.value("type", "") != "TemplateProcessing") return std::nullopt;
    const json& single = p.value("single", json::array());
    if (single.empty() || !single[0].contains("SpecialToken")) return std::nullopt;
    const std::string name = string_of(member(single[0]["SpecialToken"], "id", "post_processor.single[0]"), "post_processor.single[0].SpecialToken.id");
    const json& special = member(member(p, "special_tokens", "post_processor"), name, "post_processor.special_tokens");
    const json& ids = member(special, "ids", "post_processor.special_tokens[\"" + name + "\"]");
    if (!ids.is_array() || ids.size() != 1 || !ids[0].is_number_unsigned())
      unsupported("post_processor.special_tokens[\"" + name + "\"].ids", "one id", ids);
    return ids[0].get<uint32_t>();
  }

  void read_begin_of_text(const json& root, const std::unordered_map<std::string, uint32_t>& added, HfTokenizer& t) const {
    if (const auto id = template_bos(root.value("post_processor", json()))) {
      t.begin_of_text = *id;
      t.prompt_begins = true;
      return;
    }
    for (const char* name : {"<|begin_of_text|>", "<s>", "<|endoftext|>"}) {
      if (added.count(name)) {
        t.begin_of_text = added.at(name);
        t.prompt_begins = std::string_view(name) != "<|endoftext|>";
        return;
      }
    }
    fail_input(path_, "post_processor and added_tokens",
               "a TemplateProcessing with a leading special token, or an added token <|begin_of_text|>, <s> or <|endoftext|>",
               "neither");
  }

 private:
  std::string path_;
};

}  // namespace

HfTokenizer read_hf_tokenizer(const std::string& path) {
  json root;
  try {
    root = json::parse(read_file(path, "a tokenizer.json"));
  } catch (const json::exception& e) {
    fail_input(path, "content", "JSON", e.what());
  }
  if (!root.is_object()) fail_input(path, "content", "a JSON object", root.type_name());
  const Reader reader(path);
  HfTokenizer t;
  try {
    reader.check_model_type(root);
    reader.read_normalizer(root, t);
    reader.read_pre_tokenizer(root, t);
    reader.read_model(root, t);
    reader.read_byte_tokens(root["model"], t);
    t.specials = reader.read_added_tokens(root, t);
    reader.read_begin_of_text(root, t.specials, t);
    if (t.begin_of_text >= t.vocab_size)
      fail_input(path, "post_processor (beginning-of-text token)", "an id below the vocabulary's " + std::to_string(t.vocab_size),
                 std::to_string(t.begin_of_text));
  } catch (const json::exception& e) {  // a member of an unexpected type somewhere
    fail_input(path, "structure", "a tokenizer.json as Hugging Face's tokenizers writes it", e.what());
  }
  return t;
}

}  // namespace eth

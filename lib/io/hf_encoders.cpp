// eth_tokenize's encoders for a tokenizer.json (lib/io/hf_tokenizer.hpp): byte-level BPE over
// pre-tokens, each thread with its cache of them, and SentencePiece-style BPE over whole
// documents.
#include <algorithm>
#include <array>

#include "lib/base/utf8.hpp"
#include "lib/io/gpt2_bpe.hpp"
#include "lib/io/gpt2_pretokenizer.hpp"
#include "lib/io/hf_tokenizer.hpp"
#include "lib/io/pretoken_cache.hpp"

namespace eth {
namespace {

const std::string_view kSpaceMark = "\xE2\x96\x81";  // "▁" (U+2581)

class HfCorpusTokenizer : public CorpusTokenizer {
 public:
  explicit HfCorpusTokenizer(HfTokenizer t) : t_(std::move(t)) {}
  uint32_t begin_of_text() const override { return t_.begin_of_text; }
  uint64_t vocab_size() const override { return t_.vocab_size; }

 protected:
  HfTokenizer t_;
};

// Byte-level BPE: each pre-token's bytes, as their stand-ins' tokens, merged (or, with
// ignore_merges, the pre-token's own token when the vocabulary has it whole).
class ByteLevelTokenizer final : public HfCorpusTokenizer {
 public:
  using HfCorpusTokenizer::HfCorpusTokenizer;

  bool is_safe_cut(std::string_view text, size_t pos) const override {
    return t_.split ? split_safe_cut(*t_.split, text, pos) : eth::is_safe_cut(text, pos);
  }
  std::unique_ptr<PieceEncoder> encoder() const override { return std::make_unique<Encoder>(t_); }

 private:
  class Encoder final : public PieceEncoder {
   public:
    explicit Encoder(const HfTokenizer& t) : t_(t) {
      for (int b = 0; b < 256; b++) stand_in_[b] = byte_stand_in(b);
    }
    void encode(std::string_view text, size_t begin, size_t end, std::vector<uint32_t>& out) override {
      for (size_t pos = begin; pos < end;) {
        const size_t next = t_.split ? split_match_end(*t_.split, text, pos) : pretoken_end(text, pos);
        cache_.append(text.substr(pos, next - pos), out,
                      [&](std::string_view bytes, std::vector<uint32_t>& ids) { encode_pretoken(bytes, ids); });
        pos = next;
      }
    }

   private:
    void encode_pretoken(std::string_view bytes, std::vector<uint32_t>& ids) {
      if (t_.ignore_merges) {
        stand_ins_.clear();
        for (const char b : bytes) stand_ins_ += stand_in_[static_cast<unsigned char>(b)];
        const auto it = t_.vocab.find(stand_ins_);
        if (it != t_.vocab.end()) return ids.push_back(it->second);
      }
      word_.resize(bytes.size());
      for (size_t i = 0; i < bytes.size(); i++) word_[i] = t_.byte_ids[static_cast<unsigned char>(bytes[i])];
      t_.merges.merge(word_);
      ids.insert(ids.end(), word_.begin(), word_.end());
    }

    const HfTokenizer& t_;
    PretokenCache<uint32_t> cache_;
    std::array<std::string, 256> stand_in_;  // byte -> its stand-in character, as UTF-8
    std::string stand_ins_;
    std::vector<uint32_t> word_;
  };
};

// SentencePiece-style BPE: the document with "▁" before it and for every ' ' is one word of
// characters; runs of characters in the vocabulary are merged (a character outside it merges
// with nothing), and each character outside it becomes its bytes' <0xNN> tokens.
class SentencePieceTokenizer final : public HfCorpusTokenizer {
 public:
  using HfCorpusTokenizer::HfCorpusTokenizer;

  bool is_safe_cut(std::string_view, size_t) const override { return false; }  // a document is one word
  std::unique_ptr<PieceEncoder> encoder() const override { return std::make_unique<Encoder>(t_); }

 private:
  class Encoder final : public PieceEncoder {
   public:
    explicit Encoder(const HfTokenizer& t) : t_(t) {}
    void encode(std::string_view text, size_t begin, size_t end, std::vector<uint32_t>& out) override {
      normalized_.assign(kSpaceMark);
      for (const char c : text.substr(begin, end - begin)) {
        if (c == ' ') normalized_ += kSpaceMark;
        else normalized_ += c;
      }
      word_.clear();
      for (size_t i = 0; i < normalized_.size();) {
        int len = 0;
        decode_utf8(normalized_, i, &len);
        const auto it = t_.vocab.find(std::string_view(normalized_).substr(i, len));
        if (it != t_.vocab.end()) {
          word_.push_back(it->second);
        } else {
          flush(out);
          for (int k = 0; k < len; k++) out.push_back(t_.byte_ids[static_cast<unsigned char>(normalized_[i + k])]);
        }
        i += len;
      }
      flush(out);
    }

   private:
    void flush(std::vector<uint32_t>& out) {
      t_.merges.merge(word_);
      out.insert(out.end(), word_.begin(), word_.end());
      word_.clear();
    }

    const HfTokenizer& t_;
    std::string normalized_;
    std::vector<uint32_t> word_;  // the characters since the last one outside the vocabulary
  };
};

}  // namespace

std::unique_ptr<CorpusTokenizer> open_hf_tokenizer(const std::string& path) { return hf_corpus_tokenizer(read_hf_tokenizer(path)); }

std::unique_ptr<CorpusTokenizer> hf_corpus_tokenizer(HfTokenizer t) {
  if (t.kind == HfTokenizer::Kind::kSentencePiece) return std::make_unique<SentencePieceTokenizer>(std::move(t));
  return std::make_unique<ByteLevelTokenizer>(std::move(t));
}

}  // namespace eth

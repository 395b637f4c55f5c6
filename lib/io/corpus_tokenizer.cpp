#include "lib/io/corpus_tokenizer.hpp"

#include <filesystem>

#include "lib/io/gpt2_bpe.hpp"
#include "lib/io/gpt2_pretokenizer.hpp"
#include "lib/io/hf_tokenizer.hpp"

namespace eth {
namespace {

// GPT-2's built-in BPE as eth_tokenize has always run it: <|endoftext|> before each document.
class Gpt2CorpusTokenizer final : public CorpusTokenizer {
 public:
  explicit Gpt2CorpusTokenizer(Gpt2Bpe bpe) : bpe_(std::move(bpe)) {}
  uint32_t begin_of_text() const override { return kEndOfText; }
  uint64_t vocab_size() const override { return uint64_t(kEndOfText) + 1; }
  bool is_safe_cut(std::string_view text, size_t pos) const override { return eth::is_safe_cut(text, pos); }
  std::unique_ptr<PieceEncoder> encoder() const override { return std::make_unique<Encoder>(bpe_); }

 private:
  class Encoder final : public PieceEncoder {
   public:
    explicit Encoder(const Gpt2Bpe& bpe) : encoder_(bpe) {}
    void encode(std::string_view text, size_t begin, size_t end, std::vector<uint32_t>& out) override {
      ids_.clear();
      encoder_.encode(text, begin, end, ids_);
      out.insert(out.end(), ids_.begin(), ids_.end());
    }

   private:
    Gpt2Encoder encoder_;
    std::vector<uint16_t> ids_;
  };
  Gpt2Bpe bpe_;
};

}  // namespace

std::string tokenizer_json_path(const std::string& path) {
  if (path.ends_with(".json")) return path;
  const std::string inside = (std::filesystem::path(path) / "tokenizer.json").string();
  return std::filesystem::is_directory(path) && std::filesystem::exists(inside) ? inside : "";
}

std::unique_ptr<CorpusTokenizer> open_corpus_tokenizer(const std::string& path) {
  const std::string json = tokenizer_json_path(path);
  if (!json.empty()) return open_hf_tokenizer(json);
  return gpt2_corpus_tokenizer(Gpt2Bpe(path));
}

std::unique_ptr<CorpusTokenizer> gpt2_corpus_tokenizer(Gpt2Bpe bpe) {
  return std::make_unique<Gpt2CorpusTokenizer>(std::move(bpe));
}

}  // namespace eth

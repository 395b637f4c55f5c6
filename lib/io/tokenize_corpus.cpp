#include "lib/io/tokenize_corpus.hpp"

#include <omp.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "lib/base/input_error.hpp"
#include "lib/base/progress.hpp"
#include "lib/base/read_file.hpp"
#include "lib/base/utf8.hpp"
#include "lib/io/corpus_tokenizer.hpp"
#include "lib/io/shard_writer.hpp"

namespace eth {
namespace {

constexpr uint64_t kBatchBytes = uint64_t(64) << 20;  // input read and encoded together
constexpr size_t kChunkBytes = size_t(256) << 10;     // a unit of parallel work inside a document

uint64_t file_bytes(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) fail_input(path, "file", "a readable input", std::strerror(errno));
  return static_cast<uint64_t>(st.st_size);
}

// The corpus as one token stream: document d starts with its beginning-of-text token at
// doc_first[d].
struct Corpus {
  std::vector<uint32_t> tokens;
  std::vector<uint64_t> doc_first;
};

// Encodes a batch of documents in pieces cut at safe pre-token boundaries, on every thread,
// and appends them to the corpus in order.
void encode_batch(const std::vector<std::string>& docs, double bytes_per_text_byte, const CorpusTokenizer& tokenizer,
                  std::vector<std::unique_ptr<PieceEncoder>>& encoders, Progress& progress, Corpus& corpus) {
  struct Piece {
    size_t doc, begin, end;
  };
  std::vector<Piece> pieces;
  for (size_t d = 0; d < docs.size(); d++) {
    const std::string_view text = docs[d];
    for (size_t begin = 0, end; begin < text.size(); begin = end) {
      end = std::min(begin + kChunkBytes, text.size());
      while (end < text.size() && !tokenizer.is_safe_cut(text, end)) end++;
      pieces.push_back({d, begin, end});
    }
  }
  std::vector<std::vector<uint32_t>> tokens(pieces.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t i = 0; i < pieces.size(); i++) {
    const Piece& p = pieces[i];
    encoders[omp_get_thread_num()]->encode(docs[p.doc], p.begin, p.end, tokens[i]);
    progress.add(bytes_per_text_byte * double(p.end - p.begin), tokens[i].size());
  }
  for (size_t i = 0; i < pieces.size(); i++) {
    if (pieces[i].begin == 0) {
      corpus.doc_first.push_back(corpus.tokens.size());
      corpus.tokens.push_back(tokenizer.begin_of_text());
    }
    corpus.tokens.insert(corpus.tokens.end(), tokens[i].begin(), tokens[i].end());
  }
}

Corpus encode_inputs(const TokenizeOptions& o, const CorpusTokenizer& tokenizer) {
  std::vector<std::unique_ptr<PieceEncoder>> encoders;
  for (int t = 0; t < omp_get_max_threads(); t++) encoders.push_back(tokenizer.encoder());
  uint64_t total_bytes = 0;
  for (const std::string& path : o.inputs) total_bytes += file_bytes(path);  // a missing input fails first
  Progress progress("eth_tokenize", double(total_bytes));
  Corpus corpus;
  for (size_t next = 0; next < o.inputs.size();) {
    std::vector<std::string> docs;
    uint64_t batch_bytes = 0, text_bytes = 0;
    while (next < o.inputs.size() && batch_bytes < kBatchBytes) {
      batch_bytes += file_bytes(o.inputs[next]);
      read_documents(o.inputs[next++], o.jsonl_field, docs);
    }
    for (const std::string& doc : docs) text_bytes += doc.size();
    encode_batch(docs, double(batch_bytes) / double(text_bytes), tokenizer, encoders, progress, corpus);
  }
  progress.finish();
  return corpus;
}

std::string shard_path(const std::string& output, size_t index) {
  const std::string stem = output.ends_with(".bin") ? output.substr(0, output.size() - 4) : output;
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), "_%06zu.bin", index);
  return stem + suffix;
}

// Writes documents [first, end) of the corpus to `output`, or to its numbered shards.
void write_output(const Corpus& corpus, size_t first, size_t end, const std::string& output, uint64_t shard_tokens,
                  const ShardLayout& layout, ShardWriter& writer, std::vector<std::string>& report) {
  const uint64_t begin_token = corpus.doc_first[first];
  const uint64_t end_token = end < corpus.doc_first.size() ? corpus.doc_first[end] : corpus.tokens.size();
  const std::string docs = "documents " + std::to_string(first + 1) + "-" + std::to_string(end) + " of " +
                           std::to_string(corpus.doc_first.size());
  const uint64_t per_file = shard_tokens ? shard_tokens : end_token - begin_token;
  for (uint64_t t = begin_token, index = 0; t < end_token; t += per_file, index++) {
    const uint64_t count = std::min(per_file, end_token - t);
    const std::string path = shard_tokens ? shard_path(output, index) : output;
    writer.write(path, corpus.tokens.data() + t, count, layout);
    report.push_back(path + ": " + std::to_string(count) + " tokens (" + docs + ")");
  }
}

}  // namespace

void read_documents(const std::string& path, const std::string& field, std::vector<std::string>& docs) {
  std::string text = read_file(path, "a readable input");
  if (text.empty()) fail_input(path, "text", "a non-empty input", "an empty file");
  repair_utf8(text);
  if (field.empty()) {
    docs.push_back(std::move(text));
    return;
  }
  const std::string what = "field \"" + field + "\"";
  const size_t before = docs.size();
  size_t line_no = 0;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    const std::string_view line(text.data() + begin, end - begin);
    begin = end + 1;
    line_no++;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = path + ": line " + std::to_string(line_no);
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number past double's
      fail_input(where, "JSON", "one JSON object per line", e.what());
    }
    if (!value.is_object()) fail_input(where, "JSON", "an object with a string " + what, value.type_name());
    const auto it = value.find(field);
    if (it == value.end()) fail_input(where, what, "a string", "no such field");
    if (!it->is_string()) fail_input(where, what, "a string", it->type_name());
    if (it->get_ref<const std::string&>().empty()) fail_input(where, what, "a non-empty string", "\"\"");
    docs.push_back(it->get<std::string>());
  }
  if (docs.size() == before) fail_input(path, "lines", "at least one JSON line with a " + what, "none");
}

std::vector<std::string> tokenize_corpus(const TokenizeOptions& o) {
  const bool split = !o.val_output.empty();
  if (split != (o.val_fraction != 0) || (split && !(o.val_fraction > 0 && o.val_fraction < 1)))
    fail_input("--val-fraction", "value", "a fraction strictly between 0 and 1, given together with --val-output",
               std::to_string(o.val_fraction) + (split ? " with --val-output" : " without --val-output"));

  if (o.token_bits != 0 && o.token_bits != 16 && o.token_bits != 32)
    fail_input("--token-bits", "value", "16 or 32 (or unset: 32 where the vocabulary passes 65,536 ids)",
               std::to_string(o.token_bits));
  const std::unique_ptr<CorpusTokenizer> tokenizer = open_corpus_tokenizer(o.tokenizer);
  const bool wide_vocab = tokenizer->vocab_size() > uint64_t(UINT16_MAX) + 1;
  if (o.token_bits == 16 && wide_vocab)
    fail_input("--token-bits", "16", "a vocabulary of at most 65,536 ids for uint16 tokens",
               std::to_string(tokenizer->vocab_size()) + " ids in " + o.tokenizer);
  const ShardLayout& layout = o.token_bits == 32 || wide_vocab ? kShardLayout32 : kShardLayout16;
  const Corpus corpus = encode_inputs(o, *tokenizer);
  const size_t documents = corpus.doc_first.size();
  size_t val_documents = 0;
  if (split) {
    if (documents < 2) fail_input("--val-fraction", "documents", "at least 2 to split", std::to_string(documents));
    const auto wanted = static_cast<size_t>(std::llround(o.val_fraction * double(documents)));
    val_documents = std::clamp<size_t>(wanted, 1, documents - 1);
  }
  ShardWriter writer;
  std::vector<std::string> report;
  write_output(corpus, 0, documents - val_documents, o.output, o.shard_tokens, layout, writer, report);
  if (split) write_output(corpus, documents - val_documents, documents, o.val_output, o.shard_tokens, layout, writer, report);
  writer.commit();
  return report;
}

}  // namespace eth

#include "lib/io/gpt2_pretokenizer.hpp"

#include "lib/io/pretoken_scan.hpp"

namespace eth {
namespace {

bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

}  // namespace

size_t pretoken_end(std::string_view text, size_t pos, SpaceRule rule) {
  // The contractions 's 't 're 've 'm 'll 'd (lower case only: the regex has no i flag).
  if (const size_t n = contraction_length(text, pos, false)) return pos + n;

  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional ' ', then a run of one class.
  const size_t start = text[pos] == ' ' && pos + 1 < text.size() ? pos + 1 : pos;
  const ScannedChar first = char_at(text, start, rule);
  if (first.cls != CharClass::kSpace) return class_run_end(text, start + first.len, first.cls, rule);
  return space_run_match_end(text, pos, rule);
}

bool is_safe_cut(std::string_view text, size_t pos) {
  const char before = text[pos - 1], at = text[pos];
  return before != ' ' && is_ascii_space(before) && static_cast<unsigned char>(at) < 0x80 && !is_ascii_space(at);
}

}  // namespace eth

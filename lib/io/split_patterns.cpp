#include "lib/io/split_patterns.hpp"

#include "lib/io/gpt2_pretokenizer.hpp"
#include "lib/io/pretoken_scan.hpp"

namespace eth {
namespace {

constexpr SpaceRule kRule = SpaceRule::kWhiteSpace;

bool is_newline(char c) { return c == '\r' || c == '\n'; }

// Llama 3's pattern (Qwen2's with max_digits 1), alternative by alternative: the first that
// matches at pos wins, as in a backtracking regex engine.
size_t llama3_match_end(std::string_view text, size_t pos, int max_digits) {
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
  if (const size_t n = contraction_length(text, pos, true)) return pos + n;
  const ScannedChar c0 = char_at(text, pos, kRule);
  const size_t after0 = pos + c0.len;
  // [^\r\n\p{L}\p{N}]?\p{L}+: letters, or one character neither a newline nor a number before them
  if (c0.cls == CharClass::kLetter) return class_run_end(text, after0, CharClass::kLetter, kRule);
  if (c0.cls != CharClass::kNumber && !is_newline(text[pos]) && after0 < text.size() &&
      char_at(text, after0, kRule).cls == CharClass::kLetter)
    return class_run_end(text, after0, CharClass::kLetter, kRule);
  // \p{N}{1,3}
  if (c0.cls == CharClass::kNumber) {
    size_t i = after0;
    for (int digits = 1; digits < max_digits && i < text.size(); digits++) {
      const ScannedChar c = char_at(text, i, kRule);
      if (c.cls != CharClass::kNumber) break;
      i += c.len;
    }
    return i;
  }
  // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
  const size_t start = text[pos] == ' ' && after0 < text.size() ? after0 : pos;
  if (char_at(text, start, kRule).cls == CharClass::kOther) {
    size_t i = class_run_end(text, start, CharClass::kOther, kRule);
    while (i < text.size() && is_newline(text[i])) i++;
    return i;
  }
  // c0 is white space. `\s*[\r\n]+`: the run up to and including its last newline, if it has one
  // (\s* backs off to the last newline, and no newline follows it inside the run).
  size_t i = pos, last_newline = std::string_view::npos;
  while (i < text.size()) {
    const ScannedChar c = char_at(text, i, kRule);
    if (c.cls != CharClass::kSpace) break;
    if (is_newline(text[i])) last_newline = i;
    i += c.len;
  }
  if (last_newline != std::string_view::npos) return last_newline + 1;
  // `\s+(?!\S)|\s+`
  return space_run_match_end(text, pos, kRule);
}

}  // namespace

std::optional<SplitPattern> recognise_split_pattern(std::string_view regex) {
  if (regex == R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)")
    return SplitPattern::kLlama3;
  if (regex == R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)")
    return SplitPattern::kQwen2;
  if (regex == R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)") return SplitPattern::kGpt2;
  return std::nullopt;
}

size_t split_match_end(SplitPattern pattern, std::string_view text, size_t pos) {
  switch (pattern) {
    case SplitPattern::kLlama3: return llama3_match_end(text, pos, 3);
    case SplitPattern::kQwen2: return llama3_match_end(text, pos, 1);
    case SplitPattern::kGpt2: return pretoken_end(text, pos, kRule);
  }
  return text.size();
}

bool split_safe_cut(SplitPattern pattern, std::string_view text, size_t pos) {
  if (pattern == SplitPattern::kGpt2) return is_safe_cut(text, pos);
  // After a newline, before a printable ASCII character: no alternative carries a newline into
  // what follows it ([\r\n]* and \s*[\r\n]+ end at the run's last newline; the optional character
  // before letters is never one), so the match holding the newline ends here.
  const auto at = static_cast<unsigned char>(text[pos]);
  return is_newline(text[pos - 1]) && at > ' ' && at < 0x7F;
}

}  // namespace eth

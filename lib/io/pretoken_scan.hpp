// What the hand-written pre-tokenizer matchers (gpt2_pretokenizer.cpp, split_patterns.cpp) read
// text with: one character's class and length, and the ASCII contractions their regexes start with.
#pragma once

#include <cstddef>
#include <string_view>

#include "lib/base/unicode_classes.hpp"
#include "lib/base/utf8.hpp"

namespace eth {

struct ScannedChar {
  CharClass cls;
  int len;  // bytes
};

inline ScannedChar char_at(std::string_view text, size_t i, SpaceRule rule) {
  int len = 0;
  const char32_t cp = decode_utf8(text, i, &len);
  return {char_class(cp, rule), len};
}

// The end of the run of characters of class `cls` that starts at text[i].
inline size_t class_run_end(std::string_view text, size_t i, CharClass cls, SpaceRule rule) {
  while (i < text.size()) {
    const ScannedChar c = char_at(text, i, rule);
    if (c.cls != cls) break;
    i += c.len;
  }
  return i;
}

// `\s+(?!\S)|\s+` at text[pos], a white-space character: a white-space run up to the end of the
// text, or all of it but its last character when something else follows (which that last one,
// if ' ', joins); a run of one character followed by something else falls through to `\s+`,
// which takes it.
inline size_t space_run_match_end(std::string_view text, size_t pos, SpaceRule rule) {
  size_t i = pos, last = pos;
  while (i < text.size()) {
    const ScannedChar c = char_at(text, i, rule);
    if (c.cls != CharClass::kSpace) break;
    last = i;
    i += c.len;
  }
  if (i == text.size() || last == pos) return i;
  return last;
}

// The length of the contraction 's 't 're 've 'm 'll 'd at text[pos], or 0: with any_case, its
// letters in either case (ASCII only: tokenizers.js folds the regex's (?i:...) to [sS] and so on).
inline size_t contraction_length(std::string_view text, size_t pos, bool any_case) {
  if (text[pos] != '\'' || pos + 1 >= text.size()) return 0;
  const auto fold = [&](char c) { return any_case && c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
  const char c = fold(text[pos + 1]);
  if (c == 's' || c == 't' || c == 'm' || c == 'd') return 2;
  if (pos + 2 >= text.size()) return 0;
  const char d = fold(text[pos + 2]);
  if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return 3;
  return 0;
}

}  // namespace eth

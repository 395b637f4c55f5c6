#include "lib/io/gpt2_pretokenizer.hpp"

#include "lib/base/unicode_classes.hpp"
#include "lib/base/utf8.hpp"

namespace eth {
namespace {

struct Char {
  CharClass cls;
  int len;  // bytes
};

Char char_at(std::string_view text, size_t i) {
  int len = 0;
  const char32_t cp = decode_utf8(text, i, &len);
  return {char_class(cp), len};
}

// The contractions 's 't 're 've 'm 'll 'd (lower case only: the regex has no i flag).
size_t contraction_length(std::string_view text, size_t pos) {
  if (text[pos] != '\'' || pos + 1 >= text.size()) return 0;
  const char c = text[pos + 1];
  if (c == 's' || c == 't' || c == 'm' || c == 'd') return 2;
  if (pos + 2 >= text.size()) return 0;
  const char d = text[pos + 2];
  if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return 3;
  return 0;
}

bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

}  // namespace

size_t pretoken_end(std::string_view text, size_t pos) {
  if (const size_t n = contraction_length(text, pos)) return pos + n;

  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional ' ', then a run of one class.
  const size_t start = text[pos] == ' ' && pos + 1 < text.size() ? pos + 1 : pos;
  const Char first = char_at(text, start);
  if (first.cls != CharClass::kSpace) {
    size_t i = start + first.len;
    while (i < text.size()) {
      const Char c = char_at(text, i);
      if (c.cls != first.cls) break;
      i += c.len;
    }
    return i;
  }

  // `\s+(?!\S)` takes a white-space run up to the end of the text, or all of it but its last
  // character when something else follows (which that last one, if ' ', joins); a run of one
  // character followed by something else falls through to `\s+`, which takes it.
  size_t i = pos, last = pos;
  while (i < text.size()) {
    const Char c = char_at(text, i);
    if (c.cls != CharClass::kSpace) break;
    last = i;
    i += c.len;
  }
  if (i == text.size() || last == pos) return i;
  return last;
}

bool is_safe_cut(std::string_view text, size_t pos) {
  const char before = text[pos - 1], at = text[pos];
  return before != ' ' && is_ascii_space(before) && static_cast<unsigned char>(at) < 0x80 && !is_ascii_space(at);
}

}  // namespace eth

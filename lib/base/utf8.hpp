// UTF-8 as the reference encoder's Node reads it: fs.readFileSync(path, 'utf8') replaces each
// invalid sequence by U+FFFD following the WHATWG Encoding Standard (one U+FFFD per maximal
// subpart of an ill-formed sequence), so the same bytes give the same text, and then the same
// tokens, here.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace eth {

// Replaces each invalid sequence of `text` by U+FFFD (EF BF BD) in place; returns how many
// were replaced (0: `text` was valid UTF-8 and is untouched).
size_t repair_utf8(std::string& text);

// The length of the longest prefix of `bytes` that does not end inside a UTF-8 character: a
// lead byte among the last three whose character needs more bytes than follow it is held back
// (text streamed token by token prints whole characters only). Other bytes pass as they are.
inline size_t complete_utf8_prefix(std::string_view bytes) {
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; back++) {
    const auto c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

// The code point starting at text[i] of valid UTF-8, and its length in bytes in *len.
inline char32_t decode_utf8(std::string_view text, size_t i, int* len) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) { *len = 1; return c; }
  if (c < 0xE0) { *len = 2; return (char32_t(c & 0x1F) << 6) | (b(1) & 0x3F); }
  if (c < 0xF0) { *len = 3; return (char32_t(c & 0x0F) << 12) | (char32_t(b(1) & 0x3F) << 6) | (b(2) & 0x3F); }
  *len = 4;
  return (char32_t(c & 0x07) << 18) | (char32_t(b(1) & 0x3F) << 12) | (char32_t(b(2) & 0x3F) << 6) | (b(3) & 0x3F);
}

}  // namespace eth

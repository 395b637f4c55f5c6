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

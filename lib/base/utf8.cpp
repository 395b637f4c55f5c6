#include "lib/base/utf8.hpp"

namespace eth {
namespace {

// WHATWG's UTF-8 decoder, emitting bytes instead of code points: a sequence is cut short (one
// U+FFFD, the offending byte read again) as soon as a byte cannot continue it, which is what
// makes an overlong form, a surrogate or a code point past U+10FFFF fail at its second byte.
// Returns the number of replacements; writes the repaired text to *out when out is not null.
size_t decode(std::string_view in, std::string* out) {
  static constexpr char kReplacement[] = "\xEF\xBF\xBD";
  size_t replaced = 0, seq_start = 0;
  int needed = 0, seen = 0;
  unsigned char lower = 0x80, upper = 0xBF;
  const auto replace = [&] {
    replaced++;
    if (out) out->append(kReplacement, 3);
  };
  for (size_t i = 0; i < in.size(); i++) {
    const auto byte = static_cast<unsigned char>(in[i]);
    if (needed == 0) {
      seq_start = i;
      if (byte < 0x80) {
        if (out) out->push_back(static_cast<char>(byte));
      } else if (byte >= 0xC2 && byte <= 0xDF) {
        needed = 1;
      } else if (byte >= 0xE0 && byte <= 0xEF) {
        if (byte == 0xE0) lower = 0xA0;
        if (byte == 0xED) upper = 0x9F;
        needed = 2;
      } else if (byte >= 0xF0 && byte <= 0xF4) {
        if (byte == 0xF0) lower = 0x90;
        if (byte == 0xF4) upper = 0x8F;
        needed = 3;
      } else {
        replace();
      }
      continue;
    }
    if (byte < lower || byte > upper) {
      needed = seen = 0;
      lower = 0x80, upper = 0xBF;
      replace();
      i--;  // this byte starts afresh
      continue;
    }
    lower = 0x80, upper = 0xBF;
    if (++seen == needed) {
      if (out) out->append(in.substr(seq_start, i + 1 - seq_start));
      needed = seen = 0;
    }
  }
  if (needed != 0) replace();  // a sequence cut short by the end of the input
  return replaced;
}

}  // namespace

size_t repair_utf8(std::string& text) {
  if (decode(text, nullptr) == 0) return 0;
  std::string repaired;
  repaired.reserve(text.size() + text.size() / 2);
  const size_t replaced = decode(text, &repaired);
  text = std::move(repaired);
  return replaced;
}

}  // namespace eth

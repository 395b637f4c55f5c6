// GPT-2's pre-tokenizer: the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// applied over and over (JavaScript's matchAll, as the reference encoder does), written out by
// hand: its alternatives never need more than one character of backtracking, so a forward scan
// finds the same matches in linear time.
#pragma once

#include <cstddef>
#include <string_view>

#include "lib/base/unicode_classes.hpp"

namespace eth {

// The end of the pre-token that starts at text[pos] (pos < text.size(), text valid UTF-8). The
// match depends only on text[pos..]: a scan may start at any pre-token boundary. \s is
// JavaScript's (the reference encoder's, and tokenizers.js's ByteLevel regex) or, with
// SpaceRule::kWhiteSpace, \p{White_Space} (the same regex as a tokenizer.json Split pattern).
size_t pretoken_end(std::string_view text, size_t pos, SpaceRule rule = SpaceRule::kJavaScript);

// Whether a pre-token boundary falls at text[pos] (0 < pos < text.size()) whatever comes before:
// true after a white-space byte other than ' ' (it always ends a match: only ' ' joins the
// match after it) when a non-white-space ASCII byte follows (the space run ends there).
// Documents are cut only at such places to be encoded in parallel.
bool is_safe_cut(std::string_view text, size_t pos);

}  // namespace eth

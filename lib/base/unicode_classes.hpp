// The four kinds of character the pre-tokenizer regexes tell apart: letters (\p{L}), numbers
// (\p{N}), white space and everything else, as Node 20's regex engine defines them (the
// references run there). White space is JavaScript's \s for GPT-2's built-in pre-tokenizer (npm
// gpt-3-encoder, and tokenizers.js's ByteLevel regex), and \p{White_Space} for the Split regexes
// of tokenizer.json files (Hugging Face's Rust library; tokenizers.js rewrites \s to it): the
// two differ at U+0085 (White_Space only) and U+FEFF (\s only). The tables are generated:
// unicode_class_table.mjs says how.
#pragma once

#include <cstdint>

namespace eth {

enum class CharClass : uint8_t { kOther, kLetter, kNumber, kSpace };
enum class SpaceRule : uint8_t { kJavaScript, kWhiteSpace };

CharClass char_class(char32_t cp, SpaceRule rule = SpaceRule::kJavaScript);

}  // namespace eth

// The four kinds of character GPT-2's pre-tokenizer regex tells apart: letters (\p{L}), numbers
// (\p{N}), white space (\s) and everything else, as Node 20's regex engine defines them (the
// reference encoder runs there). The table is generated: unicode_class_table.mjs says how.
#pragma once

#include <cstdint>

namespace eth {

enum class CharClass : uint8_t { kOther, kLetter, kNumber, kSpace };

CharClass char_class(char32_t cp);

}  // namespace eth

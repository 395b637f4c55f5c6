// The Split pre-tokenizer regexes of the tokenizer.json files ETH reads, recognised by their exact
// pattern string and matched by hand (as gpt2_pretokenizer.hpp does GPT-2's): each is applied
// over and over from the start of the text, every match a pre-token, as Hugging Face's Split
// with behavior "Isolated" does (its alternatives cover every character, so nothing falls
// between matches). \s is \p{White_Space}; (?i:...) folds ASCII letters only, as tokenizers.js
// rewrites it.
//   Llama 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   Qwen2:   the same with \p{N} for \p{N}{1,3}
//   GPT-2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace eth {

enum class SplitPattern { kLlama3, kQwen2, kGpt2 };

// Which pattern `regex` (the JSON string's value) is, or nothing for any other.
std::optional<SplitPattern> recognise_split_pattern(std::string_view regex);

// The end of the match that starts at text[pos] (pos < text.size(), text valid UTF-8); it
// depends only on text[pos..].
size_t split_match_end(SplitPattern pattern, std::string_view text, size_t pos);

// Whether a match boundary falls at text[pos] (0 < pos < text.size()) whatever comes before it.
bool split_safe_cut(SplitPattern pattern, std::string_view text, size_t pos);

}  // namespace eth

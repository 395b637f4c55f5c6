#include "lib/base/unicode_classes.hpp"

#include <algorithm>
#include <array>

namespace eth {
namespace {

struct ClassRange {
  char32_t first, last;
  CharClass cls;
};

constexpr ClassRange kRanges[] = {
#include "lib/base/unicode_class_table.inc"
};
constexpr ClassRange kWhiteSpaceRanges[] = {
#include "lib/base/unicode_class_table_white_space.inc"
};

// Most text is mostly ASCII: one load instead of a binary search (the two tables agree there).
constexpr std::array<CharClass, 128> ascii_classes() {
  std::array<CharClass, 128> table{};
  for (const ClassRange& r : kRanges)
    for (char32_t cp = r.first; cp <= r.last && cp < 128; cp++) table[cp] = r.cls;
  return table;
}
constexpr std::array<CharClass, 128> kAscii = ascii_classes();

template <size_t N>
CharClass look_up(const ClassRange (&ranges)[N], char32_t cp) {
  const ClassRange* r = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                                         [](char32_t c, const ClassRange& range) { return c < range.first; });
  if (r == std::begin(ranges)) return CharClass::kOther;
  --r;
  return cp <= r->last ? r->cls : CharClass::kOther;
}

}  // namespace

CharClass char_class(char32_t cp, SpaceRule rule) {
  if (cp < 128) return kAscii[cp];
  return rule == SpaceRule::kJavaScript ? look_up(kRanges, cp) : look_up(kWhiteSpaceRanges, cp);
}

}  // namespace eth

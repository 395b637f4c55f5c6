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

// Most text is mostly ASCII: one load instead of a binary search.
constexpr std::array<CharClass, 128> ascii_classes() {
  std::array<CharClass, 128> table{};
  for (const ClassRange& r : kRanges)
    for (char32_t cp = r.first; cp <= r.last && cp < 128; cp++) table[cp] = r.cls;
  return table;
}
constexpr std::array<CharClass, 128> kAscii = ascii_classes();

}  // namespace

CharClass char_class(char32_t cp) {
  if (cp < 128) return kAscii[cp];
  const ClassRange* r = std::upper_bound(std::begin(kRanges), std::end(kRanges), cp,
                                         [](char32_t c, const ClassRange& range) { return c < range.first; });
  if (r == std::begin(kRanges)) return CharClass::kOther;
  --r;
  return cp <= r->last ? r->cls : CharClass::kOther;
}

}  // namespace eth

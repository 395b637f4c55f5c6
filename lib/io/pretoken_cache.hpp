// One thread's cache of pre-tokens and their ids: words repeat, so most pre-tokens of a corpus
// are found here instead of running BPE again. The ids of all cached pre-tokens lie end to end
// in one vector; past a bound the cache starts again.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace eth {

template <typename Id>
class PretokenCache {
 public:
  // Appends the ids of `piece` to out: the cached ones, or those encode(piece, ids) appends to
  // the vector it is given.
  template <typename Encode>
  void append(std::string_view piece, std::vector<Id>& out, const Encode& encode) {
    auto it = cache_.find(piece);
    if (it == cache_.end()) {
      if (ids_.size() > kMaxCachedIds) cache_.clear(), ids_.clear();
      const size_t first = ids_.size();
      encode(piece, ids_);
      it = cache_.emplace(piece, Span{uint32_t(first), uint32_t(ids_.size() - first)}).first;
    }
    out.insert(out.end(), ids_.begin() + it->second.first, ids_.begin() + it->second.first + it->second.count);
  }

 private:
  static constexpr size_t kMaxCachedIds = size_t(1) << 24;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Span {
    uint32_t first, count;  // into ids_
  };

  std::unordered_map<std::string, Span, Hash, std::equal_to<>> cache_;
  std::vector<Id> ids_;  // the cached pre-tokens' ids, end to end
};

}  // namespace eth

#include "lib/io/bpe_merges.hpp"

#include <functional>
#include <queue>

namespace eth {

void BpeMerges::merge(std::vector<uint32_t>& word) const {
  const size_t n = word.size();
  if (n < 2) return;
  // Symbol i sits at its first character's place; merging keeps the left symbol's place and
  // unlinks the right one. A candidate is (rank, place of its left symbol, the pair's ids); it is
  // stale when those two neighbours are no longer that pair.
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> next(n), prev(n);
  for (size_t i = 0; i < n; i++) next[i] = i + 1 < n ? uint32_t(i + 1) : kNone, prev[i] = i ? uint32_t(i - 1) : kNone;
  struct Candidate {
    uint32_t rank, at, left, right;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : at > o.at; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto consider = [&](uint32_t at) {
    if (at == kNone || next[at] == kNone) return;
    const auto it = merges_.find(key(word[at], word[next[at]]));
    if (it != merges_.end()) queue.push({it->second.rank, at, word[at], word[next[at]]});
  };
  for (uint32_t i = 0; i + 1 < n; i++) consider(i);
  std::vector<bool> gone(n, false);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    if (gone[c.at] || next[c.at] == kNone || word[c.at] != c.left || word[next[c.at]] != c.right) continue;
    const uint32_t right = next[c.at];
    word[c.at] = merges_.find(key(c.left, c.right))->second.result;
    gone[right] = true;
    next[c.at] = next[right];
    if (next[right] != kNone) prev[next[right]] = c.at;
    consider(prev[c.at]);
    consider(c.at);
  }
  size_t kept = 0;
  for (size_t i = 0; i < n; i++)
    if (!gone[i]) word[kept++] = word[i];
  word.resize(kept);
}

}  // namespace eth

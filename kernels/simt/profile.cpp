// LaunchProfile's derived figures (profile.hpp).
#include "kernels/simt/profile.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>

namespace eth::kernels::simt {

const GlobalSite* LaunchProfile::worst_site() const {
  const GlobalSite* worst = nullptr;
  for (const GlobalSite& s : sites) {
    if (s.traffic.requests == 0) continue;
    // a / b > c / d without division: a d > c b.
    const auto more = [](const GlobalTraffic& x, const GlobalTraffic& y) {
      const uint64_t l = x.sectors * y.requests, r = y.sectors * x.requests;
      return l != r ? l > r : x.requests > y.requests;
    };
    if (worst == nullptr || more(s.traffic, worst->traffic)) worst = &s;
  }
  return worst;
}

double LaunchProfile::tail_factor(int slots) const {
  const uint64_t total = std::accumulate(block_work.begin(), block_work.end(), uint64_t{0});
  if (total == 0 || slots <= 0) return 1.0;
  // The slots' finishing times, earliest on top: each block goes to the slot free first.
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> free_at;
  for (int i = 0; i < slots; i++) free_at.push(0);
  uint64_t end = 0;
  for (uint64_t w : block_work) {
    const uint64_t start = free_at.top();
    free_at.pop();
    free_at.push(start + w);
    end = std::max(end, start + w);
  }
  const double balanced = static_cast<double>(total) / static_cast<double>(std::min<size_t>(slots, block_work.size()));
  return static_cast<double>(end) / balanced;
}

}  // namespace eth::kernels::simt

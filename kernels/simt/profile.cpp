// LaunchProfile's derived figures (profile.hpp).
#include "kernels/simt/profile.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <stdexcept>

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

namespace {

void scale(GlobalTraffic& g, uint64_t f) {
  g.requests *= f;
  g.sectors *= f;
  g.lines *= f;
  g.bytes *= f;
  g.ideal_sectors *= f;
}

void scale(SharedTraffic& s, uint64_t f) {
  s.instructions *= f;
  s.wavefronts *= f;
  s.ideal *= f;
}

}  // namespace

LaunchProfile scaled(const LaunchProfile& p, Dim3 grid, uint64_t work) {
  const uint64_t from = static_cast<uint64_t>(p.grid.x) * p.grid.y * p.grid.z;
  const uint64_t to = static_cast<uint64_t>(grid.x) * grid.y * grid.z;
  if (from == 0 || to % from != 0 || work == 0)
    throw std::invalid_argument("scaled: the grid is not a whole multiple of the profile's");
  const uint64_t f = to / from * work;
  LaunchProfile s = p;
  s.grid = grid;
  scale(s.loads, f);
  scale(s.stores, f);
  for (uint64_t* c : {&s.distinct_bytes_read, &s.distinct_bytes_written, &s.distinct_sectors_read,
                      &s.distinct_sectors_written, &s.mma, &s.special, &s.fp64, &s.atomics, &s.atomic_addresses,
                      &s.barriers})
    *c *= f;
  scale(s.shared_loads, f);
  scale(s.shared_stores, f);
  scale(s.ldmatrix, f);
  for (GlobalSite& site : s.sites) scale(site.traffic, f);
  s.block_work.clear();
  s.block_work.reserve(p.block_work.size() * (f / work));
  for (uint64_t i = 0; i < f / work; i++)
    for (uint64_t w : p.block_work) s.block_work.push_back(w * work);
  return s;
}

}  // namespace eth::kernels::simt

// LaunchProfile's derived figures (profile.hpp).
#include "kernels/simt/profile.hpp"

#include <algorithm>
#include <cmath>
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

// Calls f(out's count, a's count, b's count) on every count of the three profiles (their sites
// matched by position: profiles of one kernel).
template <class F>
void each_count(LaunchProfile& out, const LaunchProfile& a, const LaunchProfile& b, F f) {
  const auto traffic = [&](GlobalTraffic& o, const GlobalTraffic& x, const GlobalTraffic& y) {
    f(o.requests, x.requests, y.requests);
    f(o.sectors, x.sectors, y.sectors);
    f(o.lines, x.lines, y.lines);
    f(o.bytes, x.bytes, y.bytes);
    f(o.ideal_sectors, x.ideal_sectors, y.ideal_sectors);
  };
  const auto shared = [&](SharedTraffic& o, const SharedTraffic& x, const SharedTraffic& y) {
    f(o.instructions, x.instructions, y.instructions);
    f(o.wavefronts, x.wavefronts, y.wavefronts);
    f(o.ideal, x.ideal, y.ideal);
  };
  traffic(out.loads, a.loads, b.loads);
  traffic(out.stores, a.stores, b.stores);
  for (size_t i = 0; i < out.sites.size() && i < a.sites.size() && i < b.sites.size(); i++)
    traffic(out.sites[i].traffic, a.sites[i].traffic, b.sites[i].traffic);
  shared(out.shared_loads, a.shared_loads, b.shared_loads);
  shared(out.shared_stores, a.shared_stores, b.shared_stores);
  shared(out.ldmatrix, a.ldmatrix, b.ldmatrix);
  f(out.distinct_bytes_read, a.distinct_bytes_read, b.distinct_bytes_read);
  f(out.distinct_bytes_written, a.distinct_bytes_written, b.distinct_bytes_written);
  f(out.distinct_sectors_read, a.distinct_sectors_read, b.distinct_sectors_read);
  f(out.distinct_sectors_written, a.distinct_sectors_written, b.distinct_sectors_written);
  f(out.mma, a.mma, b.mma);
  f(out.special, a.special, b.special);
  f(out.fp64, a.fp64, b.fp64);
  f(out.atomics, a.atomics, b.atomics);
  f(out.atomic_addresses, a.atomic_addresses, b.atomic_addresses);
  f(out.barriers, a.barriers, b.barriers);
}

// Every count of the profile times f, rounded (exact for a whole f below 2^53).
void scale_counts(LaunchProfile& s, double f) {
  each_count(s, s, s, [f](uint64_t& c, uint64_t, uint64_t) {
    c = static_cast<uint64_t>(std::llround(static_cast<double>(c) * f));
  });
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
  scale_counts(s, static_cast<double>(f));
  s.block_work.clear();
  s.block_work.reserve(p.block_work.size() * (f / work));
  for (uint64_t i = 0; i < f / work; i++)
    for (uint64_t w : p.block_work) s.block_work.push_back(w * work);
  return s;
}

uint64_t counted_blocks(Dim3 grid, Sampling sampling) {
  const uint64_t blocks = grid.count(), sample = sampling.max_blocks;
  if (sample == 0 || blocks <= sample) return blocks;
  if (grid.x > sample) return sample;
  uint64_t rows = sample / grid.x;
  const uint64_t period = sampling.row_period;
  if (period > 1 && grid.y % period == 0) rows = std::max(period, rows - rows % period);
  return std::min(blocks, rows * grid.x);
}

LaunchProfile extrapolated(const LaunchProfile& one, const LaunchProfile& two, int L) {
  if (one.grid.y != two.grid.y || one.grid.z != two.grid.z || one.grid.x > two.grid.x || L < 2 ||
      one.sites.size() != two.sites.size() || one.block_work.size() != one.grid.count() ||
      two.block_work.size() != two.grid.count())
    throw std::invalid_argument("extrapolated: " + two.dialect_name + "'s launches do not grow along x alone");
  LaunchProfile out = two;
  const uint64_t more = static_cast<uint64_t>(L - 2);
  each_count(out, one, two, [more](uint64_t& c, uint64_t a, uint64_t b) { c = b + more * (b - a); });
  const uint64_t added = two.grid.x - one.grid.x;  // blocks a layer adds
  out.grid.x = two.grid.x + static_cast<unsigned>(more * added);
  for (uint64_t i = 0; i < more; i++)
    out.block_work.insert(out.block_work.end(), two.block_work.end() - static_cast<ptrdiff_t>(added),
                          two.block_work.end());
  return out;
}

void extend_sample(LaunchProfile& p) {
  const uint64_t blocks = p.grid.count(), counted = p.block_work.size();
  if (counted == 0 || counted >= blocks) return;
  scale_counts(p, static_cast<double>(blocks) / static_cast<double>(counted));
  p.block_work.resize(blocks);
  for (uint64_t i = counted; i < blocks; i++) p.block_work[i] = p.block_work[i % counted];
  p.sampled_blocks = counted;
}

}  // namespace eth::kernels::simt

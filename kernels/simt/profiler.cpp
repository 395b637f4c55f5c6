// The counters of profiler.hpp: requests grouped per warp, closed into sectors, lines and wavefronts.
#include "kernels/simt/profiler.hpp"

#include <algorithm>
#include <bit>
#include <string>

namespace eth::kernels::simt::host {

thread_local BlockProfiler* t_profiler = nullptr;

namespace {

constexpr int kWarp = 32;
constexpr int kBanks = 32;  // of 4 bytes each

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }

// The distinct values of v.
size_t distinct(std::vector<uint64_t>& v) {
  std::sort(v.begin(), v.end());
  return static_cast<size_t>(std::unique(v.begin(), v.end()) - v.begin());
}

// One phase of a shared-memory instruction (the lanes the banks serve at once) touching the
// 4-byte words `words`: a bank delivers one word per wavefront, the same word to any number of
// lanes (a broadcast), so the phase takes as many wavefronts as the busiest bank has distinct
// words; without conflicts it would take the distinct words over the 32 banks.
void add_phase(std::vector<uint64_t>& words, SharedTraffic& out) {
  if (words.empty()) return;
  const size_t n = distinct(words);
  std::array<uint64_t, kBanks> per_bank{};
  for (size_t i = 0; i < n; i++) per_bank[words[i] % kBanks]++;
  out.wavefronts += *std::max_element(per_bank.begin(), per_bank.end());
  out.ideal += (n + kBanks - 1) / kBanks;
}

void add_words(std::vector<uint64_t>& words, uintptr_t offset, size_t bytes) {
  for (uintptr_t w = offset / 4; w <= (offset + bytes - 1) / 4; w++) words.push_back(w);
}

void add(GlobalTraffic& to, const GlobalTraffic& from) {
  to.requests += from.requests;
  to.sectors += from.sectors;
  to.lines += from.lines;
  to.bytes += from.bytes;
  to.ideal_sectors += from.ideal_sectors;
}
void add(SharedTraffic& to, const SharedTraffic& from) {
  to.instructions += from.instructions;
  to.wavefronts += from.wavefronts;
  to.ideal += from.ideal;
}

uint64_t bytes_of(const std::unordered_map<uint64_t, uint32_t>& sectors) {
  uint64_t n = 0;
  for (const auto& [sector, mask] : sectors) n += static_cast<uint64_t>(std::popcount(mask));
  return n;
}

void record_footprint(std::unordered_map<uint64_t, uint32_t>& sectors, uintptr_t address, size_t bytes) {
  for (uintptr_t b = address; b < address + bytes; b++) sectors[b >> 5] |= 1u << (b & 31);
}

std::string site_text(const Site& s) {
  const std::string file = s.file;
  const size_t slash = file.rfind('/');
  return (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" + std::to_string(s.line) + ":" +
         std::to_string(s.column);
}

}  // namespace

size_t SiteHash::operator()(const Site& s) const {
  size_t h = std::hash<const void*>()(s.file);
  h = mix(h, s.line);
  h = mix(h, s.column);
  return mix(h, static_cast<size_t>(s.kind));
}

size_t BlockProfiler::RequestHash::operator()(const RequestKey& k) const { return mix(SiteHash()(k.site), k.occurrence); }

void Tally::merge(Tally& other) {
  add(loads, other.loads);
  add(stores, other.stores);
  add(shared_loads, other.shared_loads);
  add(shared_stores, other.shared_stores);
  add(ldmatrix, other.ldmatrix);
  mma += other.mma;
  special += other.special;
  fp64 += other.fp64;
  atomics += other.atomics;
  barriers += other.barriers;
  for (const auto& [sector, mask] : other.read_sectors) read_sectors[sector] |= mask;
  for (const auto& [sector, mask] : other.written_sectors) written_sectors[sector] |= mask;
  atomic_addresses.insert(other.atomic_addresses.begin(), other.atomic_addresses.end());
  for (const auto& [site, traffic] : other.sites) add(sites[site], traffic);
  block_work.insert(block_work.end(), other.block_work.begin(), other.block_work.end());
}

void Tally::write(LaunchProfile& out, size_t blocks) const {
  out.loads = loads;
  out.stores = stores;
  out.distinct_bytes_read = bytes_of(read_sectors);
  out.distinct_bytes_written = bytes_of(written_sectors);
  out.distinct_sectors_read = read_sectors.size();
  out.distinct_sectors_written = written_sectors.size();
  out.shared_loads = shared_loads;
  out.shared_stores = shared_stores;
  out.ldmatrix = ldmatrix;
  out.mma = mma;
  out.special = special;
  out.fp64 = fp64;
  out.atomics = atomics;
  out.atomic_addresses = atomic_addresses.size();
  out.barriers = barriers;
  out.block_work.assign(blocks, 0);
  for (const auto& [index, work] : block_work) out.block_work[index] = work;
  // One entry per source text: the same file's locations seen from several translation units merge.
  std::map<std::pair<std::string, bool>, GlobalTraffic> by_text;
  for (const auto& [site, traffic] : sites)
    add(by_text[{site_text(site), site.kind == AccessKind::global_store}], traffic);
  out.sites.clear();
  for (const auto& [key, traffic] : by_text) out.sites.push_back({key.first, key.second, traffic});
}

BlockProfiler::BlockProfiler(Tally& tally, size_t threads, size_t block_index)
    : tally_(tally), block_index_(block_index), visits_(threads), open_((threads + kWarp - 1) / kWarp) {}

void BlockProfiler::access(int thread, AccessKind kind, uintptr_t address, size_t bytes,
                           const std::source_location& where) {
  work_++;
  const Site site{where.file_name(), where.line(), where.column(), kind};
  const uint32_t occurrence = visits_[static_cast<size_t>(thread)][site]++;
  Request& r = open_[static_cast<size_t>(thread / kWarp)][RequestKey{site, occurrence}];
  const int lane = thread % kWarp;
  r.kind = kind;
  r.site = site;
  r.mask |= 1u << lane;
  r.address[static_cast<size_t>(lane)] = address;
  r.bytes[static_cast<size_t>(lane)] = static_cast<uint8_t>(bytes);
  if (kind == AccessKind::global_load) record_footprint(tally_.read_sectors, address, bytes);
  if (kind == AccessKind::global_store) record_footprint(tally_.written_sectors, address, bytes);
}

void BlockProfiler::close(const Request& r) {
  if (r.kind == AccessKind::global_load || r.kind == AccessKind::global_store) {
    std::vector<uint64_t> sectors, lines;
    std::vector<std::pair<uintptr_t, uintptr_t>> ranges;  // [first, end) of each lane's bytes
    GlobalTraffic t;
    t.requests = 1;
    for (int l = 0; l < kWarp; l++) {
      if ((r.mask >> l & 1u) == 0) continue;
      const uintptr_t a = r.address[static_cast<size_t>(l)], last = a + r.bytes[static_cast<size_t>(l)] - 1;
      for (uintptr_t s = a >> 5; s <= last >> 5; s++) sectors.push_back(s);
      for (uintptr_t s = a >> 7; s <= last >> 7; s++) lines.push_back(s);
      ranges.emplace_back(a, last + 1);
      t.bytes += r.bytes[static_cast<size_t>(l)];
    }
    t.sectors = distinct(sectors);
    t.lines = distinct(lines);
    // The distinct bytes (lanes reading the same bytes count them once), in the fewest sectors.
    std::sort(ranges.begin(), ranges.end());
    uintptr_t covered = 0, end = 0;
    for (const auto& [first, stop] : ranges) {
      if (stop > end) covered += stop - std::max(first, end);
      end = std::max(end, stop);
    }
    t.ideal_sectors = (covered + 31) / 32;
    add(r.kind == AccessKind::global_load ? tally_.loads : tally_.stores, t);
    add(tally_.sites[r.site], t);
    return;
  }
  // Shared memory: lanes are served in phases of 128 bytes' worth of lanes (all 32 for accesses of
  // up to 4 bytes, half-warps for 8, quarter-warps for 16), in lane order.
  SharedTraffic& out = r.kind == AccessKind::shared_load ? tally_.shared_loads : tally_.shared_stores;
  out.instructions++;
  uint8_t widest = 1;
  for (int l = 0; l < kWarp; l++)
    if (r.mask >> l & 1u) widest = std::max(widest, r.bytes[static_cast<size_t>(l)]);
  const int per_phase = widest <= 4 ? kWarp : static_cast<int>(128 / widest);
  std::vector<uint64_t> words;
  for (int first = 0; first < kWarp; first += per_phase) {
    words.clear();
    for (int l = first; l < first + per_phase; l++)
      if (r.mask >> l & 1u) add_words(words, r.address[static_cast<size_t>(l)], r.bytes[static_cast<size_t>(l)]);
    add_phase(words, out);
  }
}

void BlockProfiler::ldmatrix(const std::array<size_t, 32>& rows, int count) {
  // Each 8 x 8 matrix is one phase: its eight 16-byte rows, one wavefront when they hit all 32 banks.
  tally_.ldmatrix.instructions++;
  work_ += kWarp;
  std::vector<uint64_t> words;
  for (int j = 0; j < count; j++) {
    words.clear();
    for (int row = 0; row < 8; row++) add_words(words, rows[static_cast<size_t>(8 * j + row)], 16);
    add_phase(words, tally_.ldmatrix);
  }
}

void BlockProfiler::atomic(uintptr_t address) {
  tally_.atomics++;
  tally_.atomic_addresses.insert(address);
  work_++;
}

void BlockProfiler::converged(int warp) {
  for (const auto& [key, request] : open_[static_cast<size_t>(warp)]) close(request);
  open_[static_cast<size_t>(warp)].clear();
}

void BlockProfiler::converged_all() {
  for (size_t w = 0; w < open_.size(); w++) converged(static_cast<int>(w));
}

void BlockProfiler::finish() {
  converged_all();
  tally_.block_work.emplace_back(block_index_, work_);
}

}  // namespace eth::kernels::simt::host

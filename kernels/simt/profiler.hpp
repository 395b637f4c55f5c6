// The interpreter's counters (profile.hpp), collected while a block runs: which lanes' accesses
// form one warp-level request, and what that request costs in sectors, lines and wavefronts.
//
// Grouping. The lanes of a warp do not run in lock step here: each runs as a fiber to its next
// stop (a barrier, a warp operation, its end). Every lane counts, per access site (file, line,
// column, and load or store), how many times it has accessed there; a request is the accesses of
// one warp with the same site and the same count. For a converged warp that is exactly the
// instruction occurrence the GPU issues for all its lanes at once. A request closes when its warp
// can have no more lanes for it: at a barrier, at a warp operation of the whole warp, at the
// block's end. Divergent code is grouped by count, not by time: lanes that reach a site on
// different trips of a loop (or one lane twice while another skips it) are grouped by their
// n-th visit, which is what a GPU that reconverges each trip does, and one request per lane
// where a branch serialises lanes by data (then the count is a lower bound on requests).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <source_location>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kernels/simt/profile.hpp"

namespace eth::kernels::simt::host {

enum class AccessKind : uint8_t { global_load, global_store, shared_load, shared_store };

// An access site: where in the source, and which kind of access.
struct Site {
  const char* file;
  uint32_t line, column;
  AccessKind kind;
  bool operator==(const Site&) const = default;
};
struct SiteHash {
  size_t operator()(const Site& s) const;
};

// What one host thread counts over the blocks it runs of a launch, merged into the launch's at its end.
struct Tally {
  GlobalTraffic loads, stores;
  SharedTraffic shared_loads, shared_stores, ldmatrix;
  uint64_t mma = 0, special = 0, fp64 = 0, atomics = 0, barriers = 0;
  std::unordered_map<uint64_t, uint32_t> read_sectors, written_sectors;  // sector -> mask of bytes touched
  std::unordered_set<uintptr_t> atomic_addresses;
  std::unordered_map<Site, GlobalTraffic, SiteHash> sites;  // global sites only
  std::vector<std::pair<size_t, uint64_t>> block_work;      // (linear block index, work)

  void merge(Tally& other);
  // Into `out`, the launch's profile (its name and shape set by the caller).
  void write(LaunchProfile& out, size_t blocks) const;
};

class BlockProfiler {
 public:
  BlockProfiler(Tally& tally, size_t threads, size_t block_index);
  // Thread `thread` accessed [address, address + bytes): global addresses as they are, shared ones
  // as offsets from the block's shared memory.
  void access(int thread, AccessKind kind, uintptr_t address, size_t bytes, const std::source_location& where);
  // ldmatrix of `count` matrices, row r of matrix j at shared offset rows[8 j + r].
  void ldmatrix(const std::array<size_t, 32>& rows, int count);
  void mma() { tally_.mma++, work_ += 32; }
  void barrier() { tally_.barriers++; }
  void special() { tally_.special++, work_++; }
  void fp64(uint64_t n) { tally_.fp64 += n, work_ += n; }
  void atomic(uintptr_t address);
  // No more lanes of warp w (of every warp) can join the requests open so far.
  void converged(int warp);
  void converged_all();
  // The block ended: its open requests closed, its work recorded.
  void finish();

 private:
  struct Request {
    AccessKind kind;
    Site site;
    unsigned mask = 0;
    std::array<uintptr_t, 32> address{};
    std::array<uint8_t, 32> bytes{};
  };
  struct RequestKey {
    Site site;
    uint32_t occurrence;
    bool operator==(const RequestKey&) const = default;
  };
  struct RequestHash {
    size_t operator()(const RequestKey& k) const;
  };
  void close(const Request& r);

  Tally& tally_;
  size_t block_index_;
  uint64_t work_ = 0;
  std::vector<std::unordered_map<Site, uint32_t, SiteHash>> visits_;  // per thread: accesses so far per site
  std::vector<std::unordered_map<RequestKey, Request, RequestHash>> open_;  // per warp
};

// The launch's profiler of the block running on this host thread; null when counters are off.
extern thread_local BlockProfiler* t_profiler;
// Sets t_profiler for a block's run, and clears it however the run ends.
struct ProfilerInstalled {
  explicit ProfilerInstalled(BlockProfiler& p) { t_profiler = &p; }
  ~ProfilerInstalled() { t_profiler = nullptr; }
  ProfilerInstalled(const ProfilerInstalled&) = delete;
  ProfilerInstalled& operator=(const ProfilerInstalled&) = delete;
};

}  // namespace eth::kernels::simt::host

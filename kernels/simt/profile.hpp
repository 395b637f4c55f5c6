// What the interpreter counts per kernel launch when its counters are on
// (Interpreter::set_counters): the quantities Nsight Compute reports per kernel that follow from
// the accesses and instructions alone, not from timing. docs/gpu.md, "Counters per launch",
// defines each (what a request, a sector, a wavefront is here) and where the count is exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/simt/types.hpp"

namespace eth::kernels::simt {

// Global-memory instructions of one direction: a request is the accesses of the active lanes of
// one warp executing one load or store instruction together.
struct GlobalTraffic {
  uint64_t requests = 0;
  uint64_t sectors = 0;  // distinct 32-byte sectors per request, summed over requests
  uint64_t lines = 0;    // distinct 128-byte lines per request, summed
  uint64_t bytes = 0;    // bytes the lanes asked for
  uint64_t ideal_sectors = 0;  // per request the fewest sectors its distinct bytes fit in, summed
  double sectors_per_request() const { return requests ? double(sectors) / double(requests) : 0.0; }
};

// Shared-memory instructions of one kind: wavefronts the banks need against the conflict-free ideal.
struct SharedTraffic {
  uint64_t instructions = 0;
  uint64_t wavefronts = 0;
  uint64_t ideal = 0;
};

// One source location of global accesses: the line a report names.
struct GlobalSite {
  std::string where;  // "file:line:column"
  bool store = false;
  GlobalTraffic traffic;
};

struct LaunchProfile {
  std::string name;          // as Nsight Compute names the kernel: "void eth::kernels::cuda::simt_entry<...>(T1)"
  std::string dialect_name;  // the kernel's kName
  Dim3 grid, block;
  size_t shared_bytes = 0;

  GlobalTraffic loads, stores;  // Global<T> element accesses and cp.async's global side
  uint64_t distinct_bytes_read = 0, distinct_bytes_written = 0;  // byte-granular footprints
  uint64_t distinct_sectors_read = 0, distinct_sectors_written = 0;  // 32-byte sectors touched
  SharedTraffic shared_loads, shared_stores, ldmatrix;
  uint64_t mma = 0;          // mma.sync instructions (warp level)
  uint64_t special = 0;      // special-function calls (exp, exp2, log, log2, tanh, sqrt), per thread
  uint64_t fp64 = 0;         // FP64 operations the dialect counts (simt::f64, sqrt_, log_), per thread
  uint64_t atomics = 0;      // atomic operations, per thread
  uint64_t atomic_addresses = 0;  // distinct addresses the atomics hit
  uint64_t barriers = 0;     // __syncthreads completed, summed over blocks
  uint64_t sampled_blocks = 0;       // 0: every block counted; else the blocks counted (extended)
  std::vector<uint64_t> block_work;  // per block (linear index, x fastest): its lane-level events
  std::vector<GlobalSite> sites;     // per source location of global accesses

  // The global site with the most sectors per request (ties: the most requests); null if none.
  const GlobalSite* worst_site() const;
  // The kernel's time over the time of perfectly balanced blocks when `slots` blocks run at once
  // (SMs times blocks per SM) and each block takes time proportional to its work: the blocks are
  // dealt in order, each to the slot free first, as the GPU's block scheduler does. 1 when the
  // blocks are balanced and fill the slots; the last wave's tail and a serial block show above it.
  double tail_factor(int slots) const;
};

// The profile of the same kernel on `grid`, a whole multiple of p.grid's blocks, as if each added
// copy of the grid did what p's blocks did on data of its own: every count times the multiple,
// the blocks' work repeated in launch order; and with `work` > 1, as if each block did its work
// `work` times over (a kernel whose grid does not grow with the batch, its loops do): every
// count and each block's work times `work` as well. Exact where the grid grows along the dimension that
// indexes independent data (the batch: a flash attention's B x NH, a layernorm's rows) and
// sectors do not straddle the copies' data, but for the distinct bytes of data the copies share
// (a layernorm's weight and bias), counted once per copy; used to profile a micro-batch of 16
// from one of 1 (test_time_model checks it against whole runs).
LaunchProfile scaled(const LaunchProfile& p, Dim3 grid, uint64_t work = 1);

// The profile of a launch whose grid grows along x by the same blocks with each layer of the
// model (AdamW's segments), at L layers from its profiles at one (`one`) and two (`two`): every
// count two's plus L - 2 times two's minus one's; the blocks two's, then its last blocks, as
// many as a layer adds, repeated (the tail's estimate). Throws std::invalid_argument where the grid grows otherwise.
LaunchProfile extrapolated(const LaunchProfile& one, const LaunchProfile& two, int L);

// Which blocks of a launch the counters count (Interpreter::set_counters): at most `max_blocks`
// (0: every block), in whole rows of `row_period` where the grid's rows come in groups of it
// (the flash kernels' B x NH rows, NH to a sample, whose blocks a sample deals among its heads).
struct Sampling {
  uint64_t max_blocks = 0;
  unsigned row_period = 1;
};

// How many blocks of `grid`, a prefix in linear order (x fastest), a launch counts under
// `sampling`: whole rows along x where a row fits, so that a grid whose rows (or groups of
// row_period rows, where grid.y is a multiple of it) are copies of one another (the batch along
// y and z) is sampled exactly, at least one group even past max_blocks; else the first
// max_blocks blocks of the first row.
uint64_t counted_blocks(Dim3 grid, Sampling sampling);

// p, whose counters cover its first p.block_work.size() blocks, extended to its whole grid: every
// count times blocks / counted (rounded), the counted blocks' work repeated in order, and
// sampled_blocks set to the counted. Exact where the counted rows are copies of the others;
// an estimate where blocks differ along the cut (the last blocks of a row of uneven segments).
void extend_sample(LaunchProfile& p);

}  // namespace eth::kernels::simt

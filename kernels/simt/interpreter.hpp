// The kernel interpreter: runs a kernel of the dialect (kernels/simt/simt.hpp) on the host, each
// block's threads as fibers, blocks spread over the host's OpenMP threads. Global memory is host
// memory; shared memory is a per-block arena that starts as NaN (every byte 0xff). What a GPU
// does silently fails the launch with one line (LaunchError): a barrier some threads never reach,
// a warp operation with the calling lane missing from its mask or a lane of the mask that never
// joins, a shared-memory index out of range, a shape or shared-memory size the target refuses, a
// race on shared memory (shared_shadow.hpp: accesses of two threads no barrier orders, a read of
// a cp.async destination before its wait). The warps of a block run in an order drawn from a
// seed (set_schedule_seed), not in lock step; a race-free kernel gives the same bits for every seed.
// It counts, per kernel, launches, the global-memory bytes read and written (every element
// access through Global<T> and every cp.async, cache hits not subtracted) and the FLOPs of the
// matrix instructions; with counters on (set_counters), each launch's profile as well
// (profile.hpp: requests, sectors, wavefronts, instructions, per-block work).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/simt/host_thread.hpp"
#include "kernels/simt/kernel_name.hpp"
#include "kernels/simt/profile.hpp"
#include "kernels/simt/types.hpp"

namespace eth::kernels::simt {

struct KernelCounts {
  uint64_t launches = 0;
  uint64_t threads = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t mma_flops = 0;
};

// The most shared memory one block may have on the oldest target the kernels are built for
// (sm_80: 163 KiB with the opt-in that kernels/simt/cuda_launch.cuh makes past 48 KiB).
constexpr size_t kMaxSharedBytesPerBlock = 163 * 1024;

class Interpreter {
 public:
  // Runs the whole grid before returning; throws LaunchError on what the header lists.
  template <typename Kernel>
  void launch(const Kernel& kernel, const LaunchShape& shape) {
    run(Kernel::kName, &profile_name<Kernel>, shape, &kernel,
        [](const void* k, HostThread& t) { (*static_cast<const Kernel*>(k))(t); });
  }

  // The seed of the order the warps run in (launch by launch the same, unless changed).
  void set_schedule_seed(uint64_t seed) { schedule_seed_ = seed; }

  // Per kernel name, since construction or the last reset.
  const std::map<std::string, KernelCounts>& counts() const { return counts_; }
  void reset_counts() { counts_.clear(); }

  // Counters per launch (profile.hpp), off unless set: they record every access of every lane
  // and make a launch several times slower. With `sampling` a launch of more blocks counts only
  // the first counted_blocks(grid, sampling) and extends their counts to the grid (extend_sample); the other blocks run uncounted, at the interpreter's plain speed, or,
  // with `run_uncounted` false, not at all (what they would write stays as it was: a profile
  // whose counts do not depend on the values, not a computation).
  void set_counters(bool on, Sampling sampling = {}, bool run_uncounted = true) {
    counters_ = on;
    sampling_ = sampling;
    run_uncounted_ = run_uncounted;
  }
  // One per launch since counters were set on or the last reset, in launch order.
  const std::vector<LaunchProfile>& profiles() const { return profiles_; }
  void reset_profiles() { profiles_.clear(); }

 private:
  using Body = void (*)(const void* kernel, HostThread& t);
  void run(const char* name, std::string (*profile_name)(), const LaunchShape& shape, const void* kernel, Body body);

  std::map<std::string, KernelCounts> counts_;
  std::vector<LaunchProfile> profiles_;
  bool counters_ = false;
  Sampling sampling_;
  bool run_uncounted_ = true;
  uint64_t schedule_seed_ = 0x5eedull;
};

}  // namespace eth::kernels::simt

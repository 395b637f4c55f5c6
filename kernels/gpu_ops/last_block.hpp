// The last-block pattern (llm.c's layernorm backward): a kernel whose blocks each write partial
// results and whose last block to finish combines them, in one launch. Every block writes its
// partials, fences, and counts itself in on a grid counter (launch.counters: zero between ops);
// the block whose add sees gridDim - 1 finished last, and every other block's partials are
// visible to it. It resets the counter to zero, as the next op that takes it expects.
#pragma once

#include "kernels/gpu_ops/common.hpp"

namespace eth::kernels::gpu_ops {

struct LastBlockSmem {
  simt::SharedArray<unsigned, 1> last;
};

// Called by every thread of the block once its global writes are done; returns in every thread
// whether this block finished last. Starts and ends with a barrier.
SIMT_DEVICE bool finished_last(Thread& t, Global<unsigned> counter, LastBlockSmem& smem) {
  t.threadfence();  // each thread's partials reach global memory before its block is counted in
  t.sync();
  if (t.thread_idx().x == 0 && t.thread_idx().y == 0 && t.thread_idx().z == 0) {
    const unsigned before = t.atomic_add(counter, 1u);
    const bool last = before == static_cast<unsigned>(t.grid_dim().count()) - 1;
    if (last) counter[0] = 0u;  // every block has counted: nobody reads it again in this launch
    smem.last(0) = last ? 1u : 0u;
  }
  t.sync();
  const bool last = smem.last(0) != 0;
  // The partials are read after the count, never before, so no stale cache line can hold them;
  // the fence orders those reads after the atomic.
  if (last) t.threadfence();
  return last;
}

}  // namespace eth::kernels::gpu_ops

// The kernel dialect: what a kernel of kernels/gpu_ops includes. A kernel is a struct of its
// arguments with a body `SIMT_DEVICE void operator()(Thread& t) const`; it reads its indices,
// synchronises, shuffles and issues matrix instructions through `t`. nvcc compiles the body for
// the GPU (Thread = DeviceThread: the intrinsics themselves) and g++ for the host (Thread =
// HostThread: the interpreter of interpreter.hpp). Shared memory is one struct per kernel of
// SharedArray members, which the launch sizes (LaunchShape::shared_bytes = sizeof the struct),
// and where a length is known at launch only, a SharedSpan after it (Thread::shared_after).
// docs/gpu.md, "The kernel interpreter", says what the host side checks and counts.
#pragma once

#include "kernels/simt/f64.hpp"
#include "kernels/simt/fragments.hpp"
#include "kernels/simt/memory.hpp"
#include "kernels/simt/qualifiers.hpp"
#include "kernels/simt/types.hpp"

#if defined(__CUDACC__)
#include "kernels/simt/device_thread.cuh"
namespace eth::kernels::simt {
using Thread = DeviceThread;
}
#else
#include "kernels/simt/host_thread.hpp"
namespace eth::kernels::simt {
using Thread = HostThread;
}
#endif

namespace eth::kernels::simt {
constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;
}  // namespace eth::kernels::simt

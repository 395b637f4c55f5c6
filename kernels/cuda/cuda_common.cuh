// Shared pieces of the CUDA backend's kernels: launch sizes, deterministic warp and block
// reductions, and the backend's scratch memory. Every reduction here adds in a fixed order
// (a butterfly over lanes, then warps in index order), so results are bitwise reproducible.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>

#include "kernels/cuda/cuda_check.hpp"

namespace eth::kernels::cuda {

constexpr int kWarp = 32;

inline size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

// Blocks of `threads` for a grid-stride loop over n items; capped, the loop covers the rest.
inline unsigned grid_for(size_t n, int threads) {
  return static_cast<unsigned>(std::clamp<size_t>(ceil_div(n, static_cast<size_t>(threads)), 1, size_t{1} << 20));
}

template <typename V>
__device__ inline V warp_sum(V v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the block, returned to every thread. blockDim.x must be a multiple of 32 and at most
// 1024; `shared` holds 32 values. Ends with a __syncthreads, so `shared` may be reused at once.
template <typename V>
__device__ inline V block_sum(V v, V* shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  v = warp_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  V total = lane < warps ? shared[lane] : V(0);
  total = warp_sum(total);
  __syncthreads();
  return total;
}

__device__ inline float block_max(float v, float* shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  v = warp_max(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float total = lane < warps ? shared[lane] : -INFINITY;
  total = warp_max(total);
  __syncthreads();
  return total;
}

// Device memory the backend lends its ops for intermediate results. Ops run in stream order, so
// one op's use has ended on the device before the next op's kernels start; growing it waits for
// the stream first, since kernels already queued may still read the old allocation.
class Scratch {
 public:
  explicit Scratch(cudaStream_t stream) : stream_(stream) {}
  ~Scratch() {
    if (ptr_ != nullptr) {
      cudaStreamSynchronize(stream_);
      cudaFree(ptr_);
    }
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  // At least `bytes` of device memory, 256-byte aligned; its content is undefined.
  void* get(size_t bytes) {
    if (bytes > bytes_) {
      if (ptr_ != nullptr) {
        CUDA_CHECK(cudaStreamSynchronize(stream_));
        CUDA_CHECK(cudaFree(ptr_));
        ptr_ = nullptr;
        bytes_ = 0;
      }
      CUDA_CHECK(cudaMalloc(&ptr_, bytes));
      bytes_ = bytes;
    }
    return ptr_;
  }

 private:
  cudaStream_t stream_;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Carves consecutive 256-byte aligned pieces out of one scratch request.
class ScratchCarver {
 public:
  template <typename T>
  size_t add(size_t count) {
    const size_t at = total_;
    total_ += (count * sizeof(T) + 255) / 256 * 256;
    return at;
  }
  size_t total() const { return total_; }

 private:
  size_t total_ = 0;
};

}  // namespace eth::kernels::cuda

// What the CUDA backend's host side shares: the scratch memory it lends its ops, and the stall
// kernel. The kernels themselves and their reductions are in kernels/gpu_ops.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>

#include "kernels/cuda/cuda_check.hpp"

namespace eth::kernels::cuda {

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

  size_t bytes() const { return bytes_; }
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

// Device::stall: one thread spinning on the global timer for `ns` (elementwise.cu).
void stall(long long ns, cudaStream_t stream);

}  // namespace eth::kernels::cuda

// The Launch of kernels/gpu_ops/ops.hpp on the CUDA backend: kernels of the dialect enqueued on
// the backend's stream (the dialect's device side: simt::DeviceThread), fp32 GEMMs through
// cuBLAS, bf16 GEMMs through cuBLASLt and the pair sort through CUB, all on the same stream.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/gpu_ops/gemm16.hpp"
#include "kernels/simt/simt.hpp"

namespace eth::kernels::cuda {

template <typename Kernel>
__global__ void simt_entry(Kernel kernel) {
  simt::DeviceThread t;
  kernel(t);
}

// A kernel that names its block size and how many of its blocks an SM must hold at once
// (kThreadsPerBlock, kMinBlocksPerSm: the flash attention kernels) is compiled under
// __launch_bounds__, which caps its registers so that they fit; the others are unconstrained.
template <typename Kernel, typename = void>
struct HasLaunchBounds : std::false_type {};
template <typename Kernel>
struct HasLaunchBounds<Kernel, std::void_t<decltype(Kernel::kMinBlocksPerSm)>> : std::true_type {};

template <typename Kernel>
__global__ void __launch_bounds__(Kernel::kThreadsPerBlock, Kernel::kMinBlocksPerSm)
    simt_entry_bounded(Kernel kernel) {
  simt::DeviceThread t;
  kernel(t);
}

template <typename Kernel>
constexpr auto entry_of() {
  if constexpr (HasLaunchBounds<Kernel>::value) return simt_entry_bounded<Kernel>;
  else return simt_entry<Kernel>;
}

class CudaLaunch {
 public:
  // Creates the cuBLASLt handle and its workspace: the only device allocation gemm16 uses.
  // `cublas` runs the fp32 GEMMs (gemm), or is null where the launch runs kernels alone (the
  // hardware probes): gemm then fails on cuBLAS's "not initialized".
  CudaLaunch(cudaStream_t stream, cublasHandle_t cublas);
  ~CudaLaunch();
  CudaLaunch(const CudaLaunch&) = delete;
  CudaLaunch& operator=(const CudaLaunch&) = delete;

  template <typename Kernel>
  void kernel(const Kernel& k, const simt::LaunchShape& shape) {
    constexpr auto entry = entry_of<Kernel>();
    // Past the default 48 KiB, the per-kernel opt-in (sm_80: 163 KiB), set once per kernel and
    // size: the process drives one GPU.
    static size_t opted_in = 48 * 1024;
    if (shape.shared_bytes > opted_in) {
      CUDA_CHECK(cudaFuncSetAttribute(entry, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shape.shared_bytes)));
      opted_in = shape.shared_bytes;
    }
    const dim3 grid(shape.grid.x, shape.grid.y, shape.grid.z), block(shape.block.x, shape.block.y, shape.block.z);
    entry<<<grid, block, shape.shared_bytes, stream_>>>(k);
    CUDA_CHECK_LAUNCH();
    launches_[Kernel::kName]++;
  }
  // Kernels launched, by name: the interpreter's counts must equal them for the same work.
  const std::map<std::string, uint64_t>& launches() const { return launches_; }
  // Sizes the scratch (bytes) and CUB's storage for sorting sort_rows pairs now
  // (kernels/workspace.hpp), so that no op allocates inside a step: from then on an op that asks
  // for more throws std::logic_error (the interpreter's HostLaunch checks the same in CI).
  void reserve(size_t scratch_bytes, size_t sort_rows);
  // The most shared memory a block may have with the opt-in (sm_80 163 KiB, sm_90 227 KiB, sm_86
  // and sm_89 99 KiB): an op stages a row in it where the row fits.
  size_t max_shared_bytes() const { return max_shared_bytes_; }
  void* scratch(size_t bytes) { return scratch_.get(within_reserve("scratch bytes", bytes, scratch_.bytes())); }
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* A, int lda, const float* B,
            int ldb, float beta, float* C, int ldc);
  template <class E>  // E = bf16 or fp16
  void gemm16(const gpu_ops::Gemm16<E>& g);
  // Stable: values of one key keep their order (cuda_launch.cu).
  void sort_pairs(const int32_t* keys_in, int32_t* keys_out, const int32_t* values_in, int32_t* values_out, int n);
  void read_back(void* host, const void* src, size_t bytes);

 private:
  cudaStream_t stream_;
  cublasHandle_t cublas_;
  cublasLtHandle_t cublaslt_ = nullptr;
  void* lt_workspace_ = nullptr;  // kCublasWorkspaceBytes, for cuBLASLt's split-k and stream-k kernels and cuBLAS
  Scratch scratch_;       // the ops' intermediates
  Scratch sort_scratch_;  // CUB's temporary storage, apart: the sort runs inside an op that holds scratch_
  std::map<std::string, uint64_t> launches_;
  bool reserved_ = false;
  size_t max_shared_bytes_ = 0;

  // One gemm16 shape's cuBLASLt descriptors and algorithm (cuda_launch.cu), made on its first
  // call: a step's 147 GEMMs come in a dozen shapes.
  struct LtPlan;
  using LtKey = std::array<int64_t, 16>;
  std::map<LtKey, std::unique_ptr<LtPlan>> lt_plans_;

  // `asked`, checked against what reserve() sized (`held`) once it has run.
  size_t within_reserve(const char* what, size_t asked, size_t held) const;
  template <class E>
  LtPlan& lt_plan(const gpu_ops::Gemm16<E>& g);
};

}  // namespace eth::kernels::cuda

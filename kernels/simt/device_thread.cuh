// The device side of the dialect's thread context: what a kernel's `Thread& t` is when nvcc
// compiles it. Every method is the CUDA intrinsic or the PTX instruction itself, inlined; the
// object holds nothing, so a kernel costs what it would written against CUDA directly.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/simt/memory.hpp"
#include "kernels/simt/types.hpp"

namespace eth::kernels::simt {

class DeviceThread {
 public:
  SIMT_DEVICE Dim3 thread_idx() const { return {threadIdx.x, threadIdx.y, threadIdx.z}; }
  SIMT_DEVICE Dim3 block_idx() const { return {blockIdx.x, blockIdx.y, blockIdx.z}; }
  SIMT_DEVICE Dim3 block_dim() const { return {blockDim.x, blockDim.y, blockDim.z}; }
  SIMT_DEVICE Dim3 grid_dim() const { return {gridDim.x, gridDim.y, gridDim.z}; }
  SIMT_DEVICE int lane() const {
    return static_cast<int>((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32);
  }
  SIMT_DEVICE int warp() const {
    return static_cast<int>((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32);
  }

  SIMT_DEVICE void sync() { __syncthreads(); }

  template <typename S>
  SIMT_DEVICE S& shared() {
    extern __shared__ __align__(16) unsigned char simt_dynamic_shared[];
    return *reinterpret_cast<S*>(simt_dynamic_shared);
  }
  template <typename T, typename S>
  SIMT_DEVICE SharedSpan<T> shared_after(size_t n) {
    extern __shared__ __align__(16) unsigned char simt_dynamic_shared[];
    return {reinterpret_cast<T*>(simt_dynamic_shared + shared_offset_after<S, T>()), n};
  }

  template <typename T>
  SIMT_DEVICE T shfl_xor(unsigned mask, T v, int lane_mask) { return __shfl_xor_sync(mask, v, lane_mask); }
  template <typename T>
  SIMT_DEVICE T shfl_down(unsigned mask, T v, int delta) { return __shfl_down_sync(mask, v, delta); }
  template <typename T>
  SIMT_DEVICE T shfl_up(unsigned mask, T v, int delta) { return __shfl_up_sync(mask, v, delta); }
  template <typename T>
  SIMT_DEVICE T shfl_idx(unsigned mask, T v, int src_lane) { return __shfl_sync(mask, v, src_lane); }
  SIMT_DEVICE unsigned ballot(unsigned mask, bool p) { return __ballot_sync(mask, p); }
  SIMT_DEVICE bool any(unsigned mask, bool p) { return __any_sync(mask, p) != 0; }
  SIMT_DEVICE bool all(unsigned mask, bool p) { return __all_sync(mask, p) != 0; }

  // mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: E = bf16 or fp16, the same fragments
  // (kernels/simt/fragments.hpp); compute capability 8.0 and later.
  template <class E>
  SIMT_DEVICE void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) {
#define SIMT_MMA_16816(TYPE)                                                                                        \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE                                               \
               ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"                         \
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                                                     \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), \
                 "f"(c[3]))
    static_assert(std::is_same_v<E, bf16> || std::is_same_v<E, fp16>);
    if constexpr (std::is_same_v<E, bf16>)
      SIMT_MMA_16816("bf16");
    else
      SIMT_MMA_16816("f16");
#undef SIMT_MMA_16816
  }

  template <int Count, bool Trans = false>
  SIMT_DEVICE void ldmatrix(uint32_t (&r)[Count], const void* row) {
    static_assert(Count == 1 || Count == 2 || Count == 4);
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
    if constexpr (Count == 1 && !Trans)
      asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(address));
    else if constexpr (Count == 1)
      asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(address));
    else if constexpr (Count == 2 && !Trans)
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                   : "=r"(r[0]), "=r"(r[1]) : "r"(address));
    else if constexpr (Count == 2)
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                   : "=r"(r[0]), "=r"(r[1]) : "r"(address));
    else if constexpr (!Trans)
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address));
    else
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address));
  }

  template <int Bytes>
  SIMT_DEVICE void cp_async(void* shared_dst, const void* global_src) {
    static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16);
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(shared_dst));
    if constexpr (Bytes == 16)  // .cg: through L2 only, the form for whole 16-byte lines
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(global_src));
    else
      asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(global_src), "n"(Bytes));
  }
  SIMT_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
  template <int N>
  SIMT_DEVICE void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

  SIMT_DEVICE unsigned atomic_add(Global<unsigned> address, unsigned value) { return atomicAdd(address.get(), value); }
  SIMT_DEVICE void threadfence() { __threadfence(); }
};

}  // namespace eth::kernels::simt

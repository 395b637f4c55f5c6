// The host side of the dialect's thread context: what a kernel's `Thread& t` is when g++
// compiles it. Each GPU thread of a block is a fiber of the interpreter (interpreter.cpp); a
// barrier, a warp operation or a matrix instruction suspends the fiber until the threads it waits
// for have arrived, and the interpreter then completes it as the PTX ISA defines it. Every call
// carries its source location, so that a report names the line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <stdexcept>
#include <type_traits>

#include "kernels/simt/memory.hpp"
#include "kernels/simt/types.hpp"

namespace eth::kernels::simt {

// A launch the interpreter stopped: a barrier or warp operation not every thread reaches, a lane
// missing from a mask, a shared-memory index out of range, a shape the target does not take. The
// message is one line naming the kernel, the block, the threads and the source line.
class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace host {

class Block;

enum class WarpOp : uint8_t { shfl_xor, shfl_down, shfl_up, shfl_idx, ballot, any, all, mma, ldmatrix };
const char* warp_op_name(WarpOp op);

// What one lane brings to a warp operation, and what it takes away.
struct WarpRequest {
  WarpOp op;
  unsigned mask;
  std::source_location where;
  uint64_t value;   // shuffles: the bits of the value; votes: the predicate
  int arg;          // shuffles: lane mask, delta or source lane; ldmatrix: matrices (1, 2, 4)
  bool trans;       // ldmatrix .trans
  const void* address;  // ldmatrix: this lane's row address in shared memory
  uint32_t a[4], b[2];  // mma: A and B fragments (pairs of 16-bit values)
  bool fp16_operands;   // mma: A and B are fp16 (else bf16)
  float c[4];           // mma: C fragment
  uint64_t result;      // shuffles and votes
  uint32_t regs[4];     // ldmatrix
  float d[4];           // mma: D fragment
};

}  // namespace host

class HostThread {
  using Where = std::source_location;

 public:
  Dim3 thread_idx() const { return thread_; }
  Dim3 block_idx() const { return block_idx_; }
  Dim3 block_dim() const { return block_dim_; }
  Dim3 grid_dim() const { return grid_dim_; }
  int lane() const { return lane_; }
  int warp() const { return warp_; }

  // __syncthreads
  void sync(Where where = Where::current());

  // The block's shared memory seen as S (a struct of SharedArray members).
  template <typename S>
  S& shared(Where where = Where::current()) {
    static_assert(std::is_trivially_destructible_v<S>);
    return *static_cast<S*>(shared_memory(sizeof(S), alignof(S), where));
  }
  // n elements of T after S in the block's shared memory (the launch must give
  // shared_bytes_after<S, T>(n)).
  template <typename T, typename S>
  SharedSpan<T> shared_after(size_t n, Where where = Where::current()) {
    static_assert(std::is_trivially_destructible_v<T>);
    auto* base = static_cast<unsigned char*>(
        shared_memory(shared_bytes_after<S, T>(n), alignof(S) > alignof(T) ? alignof(S) : alignof(T), where));
    return {reinterpret_cast<T*>(base + shared_offset_after<S, T>()), n};
  }

  // __shfl_xor_sync, __shfl_down_sync, __shfl_up_sync, __shfl_sync (width 32)
  template <typename T>
  T shfl_xor(unsigned mask, T v, int lane_mask, Where where = Where::current()) {
    return shuffle(host::WarpOp::shfl_xor, mask, v, lane_mask, where);
  }
  template <typename T>
  T shfl_down(unsigned mask, T v, int delta, Where where = Where::current()) {
    return shuffle(host::WarpOp::shfl_down, mask, v, delta, where);
  }
  template <typename T>
  T shfl_up(unsigned mask, T v, int delta, Where where = Where::current()) {
    return shuffle(host::WarpOp::shfl_up, mask, v, delta, where);
  }
  template <typename T>
  T shfl_idx(unsigned mask, T v, int src_lane, Where where = Where::current()) {
    return shuffle(host::WarpOp::shfl_idx, mask, v, src_lane, where);
  }
  // __ballot_sync, __any_sync, __all_sync
  unsigned ballot(unsigned mask, bool p, Where where = Where::current()) {
    return static_cast<unsigned>(vote(host::WarpOp::ballot, mask, p, where));
  }
  bool any(unsigned mask, bool p, Where where = Where::current()) { return vote(host::WarpOp::any, mask, p, where); }
  bool all(unsigned mask, bool p, Where where = Where::current()) { return vote(host::WarpOp::all, mask, p, where); }

  // mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: d = a b + c for the warp's 16 x 8 tile,
  // a and b of E = bf16 or fp16 (fragments as kernels/simt/fragments.hpp lays them out). Every
  // lane of the warp takes part.
  template <class E>
  void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4],
                 Where where = Where::current()) {
    static_assert(std::is_same_v<E, bf16> || std::is_same_v<E, fp16>);
    multiply(d, a, b, c, std::is_same_v<E, fp16>, where);
  }

  // ldmatrix.sync.aligned.m8n8.x{Count}[.trans].shared.b16: `row` is this lane's row address
  // (lanes 0..8 Count - 1 give rows; the others' are ignored), 16-byte aligned in shared memory.
  template <int Count, bool Trans = false>
  void ldmatrix(uint32_t (&r)[Count], const void* row, Where where = Where::current()) {
    static_assert(Count == 1 || Count == 2 || Count == 4);
    load_matrices(r, Count, Trans, row, where);
  }

  // cp.async.{ca,cg}.shared.global of `Bytes` (4, 8 or 16): the copy happens when a later
  // cp_async_wait covers its group, not before, so a read that does not wait sees the NaN that
  // shared memory starts with.
  template <int Bytes>
  void cp_async(void* shared_dst, const void* global_src, Where where = Where::current()) {
    static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16);
    async_copy(shared_dst, global_src, Bytes, where);
  }
  void cp_async_commit();                              // cp.async.commit_group
  template <int N>
  void cp_async_wait() { async_wait(N); }              // cp.async.wait_group N

  // atomicAdd on an unsigned int of global memory, returning the value before the add. Blocks
  // run concurrently on OpenMP threads, so it is a real atomic read-modify-write (sequentially
  // consistent), counted as a 4-byte read and a 4-byte write.
  unsigned atomic_add(Global<unsigned> address, unsigned value);
  // __threadfence: this thread's global-memory writes before it are seen by every thread of the
  // grid before any of its writes after it (the last-block pattern: partials, fence, counter).
  void threadfence();

 private:
  friend class host::Block;
  friend void host::shared_read(const void*, size_t, const std::source_location&);
  friend void host::shared_written(const void*, size_t, const std::source_location&);
  friend void host::global_read(const void*, size_t, const std::source_location&);
  friend void host::global_written(const void*, size_t, const std::source_location&);

  template <typename T>
  T shuffle(host::WarpOp op, unsigned mask, T v, int arg, Where where) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(uint64_t));
    host::WarpRequest& r = begin_warp_op(op, mask, where);
    r.value = 0;
    std::memcpy(&r.value, &v, sizeof(T));
    r.arg = arg;
    wait_warp_op();
    T out;
    std::memcpy(&out, &r.result, sizeof(T));
    return out;
  }
  uint64_t vote(host::WarpOp op, unsigned mask, bool p, Where where);
  void multiply(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4], bool fp16_operands,
                Where where);
  void load_matrices(uint32_t* r, int count, bool trans, const void* row, Where where);
  void async_copy(void* dst, const void* src, int bytes, Where where);
  void async_wait(int pending);
  void* shared_memory(size_t bytes, size_t align, Where where);
  host::WarpRequest& begin_warp_op(host::WarpOp op, unsigned mask, Where where);
  void wait_warp_op();

  host::Block* block_ = nullptr;
  int index_ = 0;  // linear, x fastest
  int lane_ = 0, warp_ = 0;
  Dim3 thread_, block_idx_, block_dim_, grid_dim_;
};

}  // namespace eth::kernels::simt

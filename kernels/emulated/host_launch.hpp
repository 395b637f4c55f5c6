// The Launch of kernels/gpu_ops/ops.hpp that runs an op on the host: its kernels in the kernel
// interpreter (kernels/simt/interpreter.hpp), its library calls at their contracts — sgemm as
// cuBLAS defines it (column-major, fp32 in and out, fp32 accumulation: OpenBLAS here), the bf16
// GEMM as cuBLASLt defines it (bf16 operands widened to fp32 exactly, OpenBLAS sgemm, the
// epilogue on the fp32 result, one rounding to bf16 where D is bf16), the pair sort as CUB's
// stable radix sort orders it. Memory is host memory. Counts what the GPU would
// launch: the interpreter's kernels, and the library calls with the bytes they must move at least.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/device.hpp"
#include "kernels/gpu_ops/gemm16.hpp"
#include "kernels/simt/interpreter.hpp"

namespace eth::kernels::emulated {

// One library call (cuBLAS, CUB): calls, the least bytes they read and write (every operand
// once), and their FLOPs.
struct LibraryCounts {
  uint64_t calls = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t flops = 0;
};

// One library call as the counters record it: a GEMM's shape (M x K) x (K x N) and the bytes of
// its operands' elements, or the sort (m = rows, n = k = 0).
struct LibraryCall {
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  int element_bytes = 0;
};

class HostLaunch {
 public:
  // The scratch comes from `memory` where given (the emulated backend's
  // allocator, which then counts them as device memory), else from the heap.
  explicit HostLaunch(Device* memory = nullptr) : scratch_(memory) {}

  // Sizes the scratch (bytes) now (kernels/workspace.hpp); from then on an op
  // that asks for more throws std::logic_error: on a GPU it would allocate inside a step.
  // sort_rows: the host's sort needs no storage.
  void reserve(size_t scratch_bytes, size_t sort_rows);
  template <typename Kernel>
  void kernel(const Kernel& k, const simt::LaunchShape& shape) {
    interpreter_.launch(k, shape);
  }
  void* scratch(size_t bytes);
  // The most shared memory a block may have (an op stages a row in it where the row fits):
  // the interpreter's limit, sm_80's, unless a test sets less to take an op's other path.
  size_t max_shared_bytes() const { return max_shared_bytes_; }
  void set_max_shared_bytes(size_t bytes) { max_shared_bytes_ = bytes; }
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* A, int lda, const float* B,
            int ldb, float beta, float* C, int ldc);
  template <class E>  // E = bf16 or fp16
  void gemm16(const gpu_ops::Gemm16<E>& g);
  void sort_pairs(const int32_t* keys_in, int32_t* keys_out, const int32_t* values_in, int32_t* values_out, int n);
  void read_back(void* host, const void* src, size_t bytes);

  const std::map<std::string, simt::KernelCounts>& kernel_counts() const { return interpreter_.counts(); }
  const std::map<std::string, LibraryCounts>& library_counts() const { return library_; }
  void reset_counts() {
    interpreter_.reset_counts();
    library_.clear();
  }
  // Counters per launch of the interpreter's kernels (kernels/simt/profile.hpp), off unless set:
  // with them on every launch runs several times slower; `sampling` as Interpreter's. With
  // `values` false only what the counters need runs: a launch's uncounted blocks do not, nor do
  // the GEMMs' products (the sort does: kernels index by its output); the outputs' values are
  // undefined. Library calls are recorded one by one (library_calls) while counters are on.
  void set_counters(bool on, simt::Sampling sampling = {}, bool values = true) {
    interpreter_.set_counters(on, sampling, values);
    counters_ = on;
    values_ = !on || values;
  }
  const std::vector<simt::LaunchProfile>& profiles() const { return interpreter_.profiles(); }
  const std::vector<LibraryCall>& library_calls() const { return calls_; }
  void reset_profiles() {
    interpreter_.reset_profiles();
    calls_.clear();
  }

 private:
  // Memory the launch holds, grown on request and never shrunk.
  class Held {
   public:
    explicit Held(Device* memory) : memory_(memory) {}
    ~Held() { free(); }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    void* data() const { return data_; }
    size_t bytes() const { return bytes_; }
    void grow(size_t bytes);  // to at least `bytes`, zeroed

   private:
    void free();
    Device* memory_;
    void* data_ = nullptr;
    size_t bytes_ = 0;
  };

  // Counts a library call, and records it while counters are on.
  LibraryCounts& count_call(const LibraryCall& call);

  simt::Interpreter interpreter_;
  std::map<std::string, LibraryCounts> library_;
  std::vector<LibraryCall> calls_;
  bool counters_ = false, values_ = true;
  Held scratch_;
  bool reserved_ = false;
  size_t max_shared_bytes_ = simt::kMaxSharedBytesPerBlock;
};

}  // namespace eth::kernels::emulated

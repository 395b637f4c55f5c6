// The bf16 kernel cases in the kernel interpreter (HostLaunch), on host memory.
#include <cstring>
#include <memory>

#include "kernels/emulated/host_launch.hpp"
#include "kernels/gpu_ops/classifier16.hpp"
#include "kernels/gpu_ops/flash_attention16.hpp"
#include "kernels/gpu_ops/layernorm16.hpp"
#include "kernels/gpu_ops/matmul16.hpp"
#include "kernels/gpu_ops/optimizer.hpp"
#include "tests/gpu/kernels16_run.hpp"

namespace eth::test::bf16_kernels {
namespace {

// Buffers the interpreted kernels read and write in place: host memory, kept until the run ends.
class HostMemory {
 public:
  template <typename T>
  T* put(const std::vector<T>& host) {
    T* p = allocate<T>(host.size());
    std::memcpy(p, host.data(), host.size() * sizeof(T));
    return p;
  }
  template <typename T>
  T* filled(size_t n, T value) {
    T* p = allocate<T>(n);
    for (size_t i = 0; i < n; i++) p[i] = value;
    return p;
  }
  template <typename T>
  std::vector<double> get(const T* p, size_t n) const {
    return widened(p, n);
  }

 private:
  template <typename T>
  T* allocate(size_t n) {
    // 256-byte aligned, as cudaMalloc's: the kernels' 16-byte loads rely on it.
    buffers_.emplace_back(static_cast<std::byte*>(std::aligned_alloc(256, (n * sizeof(T) + 255) / 256 * 256)));
    return reinterpret_cast<T*>(buffers_.back().get());
  }
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<std::byte, Free>> buffers_;
};

}  // namespace

std::vector<Output> run_in_interpreter() {
  kernels::emulated::HostLaunch launch;
  HostMemory memory;
  return run_cases(launch, memory);
}

}  // namespace eth::test::bf16_kernels

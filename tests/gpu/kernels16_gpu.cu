// The bf16 kernel cases on the GPU (CudaLaunch on its own stream), on device memory.
#include <cublas_v2.h>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_launch.cuh"
#include "tests/gpu/kernels16_run.hpp"

namespace eth::test::bf16_kernels {
namespace {

// Device buffers, freed when the run ends; put and get copy synchronously (the stream is idle
// between them but for the kernels, which get's cudaMemcpy waits for).
class GpuMemory {
 public:
  ~GpuMemory() {
    for (void* p : buffers_) cudaFree(p);
  }
  template <typename T>
  T* put(const std::vector<T>& host) {
    T* p = allocate<T>(host.size());
    CUDA_CHECK(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    return p;
  }
  template <typename T>
  T* filled(size_t n, T value) {
    return put(std::vector<T>(n, value));
  }
  template <typename T>
  std::vector<double> get(const T* p, size_t n) const {
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<T> host(n);
    CUDA_CHECK(cudaMemcpy(host.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return widened(host.data(), n);
  }

 private:
  template <typename T>
  T* allocate(size_t n) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
    buffers_.push_back(p);
    return static_cast<T*>(p);
  }
  std::vector<void*> buffers_;
};

}  // namespace

std::vector<Output> run_on_gpu() {
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  cublasHandle_t cublas;
  CUBLAS_CHECK(cublasCreate(&cublas));
  CUBLAS_CHECK(cublasSetStream(cublas, stream));
  std::vector<Output> outputs;
  {
    kernels::cuda::CudaLaunch launch(stream, cublas);
    GpuMemory memory;
    outputs = run_cases(launch, memory);
  }
  CUBLAS_CHECK(cublasDestroy(cublas));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return outputs;
}

}  // namespace eth::test::bf16_kernels

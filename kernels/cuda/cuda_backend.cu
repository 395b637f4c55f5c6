// The CUDA backend: device memory, one stream, one cuBLAS handle, events; the GPT operations are
// the GPU ops of kernels/gpu_ops, launched on the stream (kernels/cuda/cuda_launch.cuh).
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/cuda/cuda_probe.hpp"
#include "kernels/cuda_capability.hpp"
#include "kernels/gpu_ops/gpu_ops_backend.hpp"

namespace eth::kernels {
namespace {

class CudaBackend final : public gpu_ops::GpuOpsBackend<Backend, cuda::CudaLaunch> {
 public:
  CudaBackend(int device, const PrecisionPath& path)
      : GpuOpsBackend(path),
        device_(device),
        uuid_(cuda_device_props(device).uuid),
        compute_capability_(cuda_device_props(device).compute_capability) {
    // The path was decided from the device type's peaks (the topology's, or those discovery
    // found); a GPU that cannot run what they promise is a wrong description, not a reason to
    // compute otherwise than planned.
    if (const int needs = capability_for(path.arithmetic); compute_capability_ < needs)
      throw std::invalid_argument(
          cuda_device_props(device).name + " (compute capability " + capability_name(compute_capability_) +
          ") cannot run the " + arithmetic_name(path.arithmetic) + " kernels (compute capability " +
          capability_name(needs) + " or later) that its precision path, " + path.name() +
          ", computes on: give its device type in the topology the peaks it has (without " +
          arithmetic_name(path.arithmetic) + " units a 16-bit path computes in fp32), or another --precision");
    CUDA_CHECK(cudaSetDevice(device_));
    // Non-blocking: no implicit synchronisation with the legacy default stream, so every copy
    // below is explicitly enqueued on stream_.
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&cublas_));
    CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    // DEFAULT math keeps fp32 GEMMs in fp32; TF32 lets cuBLAS round their inputs to TF32.
    CUBLAS_CHECK(cublasSetMathMode(cublas_, tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    launch_ = std::make_unique<cuda::CudaLaunch>(stream_, cublas_);
  }

  ~CudaBackend() override {
    release_fallback();
    launch_.reset();
    cudaStreamSynchronize(stream_);
    cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
  }

  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override {
    return precision() == Precision::fp32 ? "cuda" : std::string("cuda-") + precision_name(precision());
  }
  bool host_addressable() const override { return false; }
  OpsDevice ops_device() const override { return OpsDevice::cuda; }
  int cuda_device() const override { return device_; }
  std::string gpu_uuid() const override { return uuid_; }
  void* native_stream() const override { return stream_; }
  size_t free_memory_bytes() const override {
    size_t free = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return free;
  }

  // ---- memory --------------------------------------------------------------------------
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    if (bytes == 0) return nullptr;
    CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
  }
  void release(void* ptr) override {
    // Called from destructors: report, never throw. Work still queued may use the memory.
    if (ptr == nullptr) return;
    cudaError_t err = cudaStreamSynchronize(stream_);
    if (err == cudaSuccess) err = cudaFree(ptr);
    report_release_error(err);
  }
  void* allocate_pinned(size_t bytes) override {
    void* p = nullptr;
    if (bytes == 0) return nullptr;
    CUDA_CHECK(cudaMallocHost(&p, bytes));
    return p;
  }
  void release_pinned(void* ptr) override {
    if (ptr == nullptr) return;
    cudaError_t err = cudaStreamSynchronize(stream_);
    if (err == cudaSuccess) err = cudaFreeHost(ptr);
    report_release_error(err);
  }
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override {
    // From pageable memory the call returns once the bytes are staged, so host_src is reusable.
    CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
  }
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override {
    CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void copy_to_device_async(void* dst, const void* pinned_src, size_t bytes) override {
    CUDA_CHECK(cudaMemcpyAsync(dst, pinned_src, bytes, cudaMemcpyHostToDevice, stream_));
  }
  void copy_to_host_async(void* pinned_dst, const void* src, size_t bytes) override {
    CUDA_CHECK(cudaMemcpyAsync(pinned_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    // cudaMemcpyDefault: unified addressing tells device from host memory, should a caller pass one.
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
  }
  void fill_zero(Tensor x, size_t n) override {
    CUDA_CHECK(cudaMemsetAsync(x.data(), 0, n * element_bytes(x.type()), stream_));
  }

  // ---- ordering ------------------------------------------------------------------------
  void synchronize() override { CUDA_CHECK(cudaStreamSynchronize(stream_)); }
  void* create_event() override {
    cudaEvent_t event = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    return event;
  }
  void destroy_event(void* event) override { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }
  void record_event(void* event) override { CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), stream_)); }
  bool event_done(void* event) override {
    const cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (err == cudaErrorNotReady) return false;
    CUDA_CHECK(err);
    return true;
  }
  void wait_event(void* event) override { CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event))); }
  void* create_timed_event() override {
    cudaEvent_t event = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDefault));
    return event;
  }
  double elapsed_ms(void* start, void* end) override {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)));
    return ms;
  }
  void stall(double ms) override { cuda::stall(static_cast<long long>(ms * 1e6), stream_); }
  void enqueue_host_function(std::function<void()> fn) override {
    auto* held = new std::function<void()>(std::move(fn));  // freed by the call
    CUDA_CHECK(cudaLaunchHostFunc(
        stream_,
        [](void* f) {
          auto* call = static_cast<std::function<void()>*>(f);
          (*call)();
          delete call;
        },
        held));
  }

  // ---- precision -----------------------------------------------------------------------
  std::string precision_path() const override {
    switch (precision()) {
      case Precision::tf32: return "tf32 (cuBLAS GEMMs on TF32 tensor cores, fp32 elsewhere)";
      case Precision::bf16:
      case Precision::fp16: {
        const std::string p = precision_name(precision());
        const std::string attention = runs_mma_16816()
                                          ? "flash attention at head sizes 64 and 128 (fp32 compute at others)"
                                          : "attention in fp32 compute (no mma.m16n8k16 before compute capability " +
                                                capability_name(kMma16816Capability) + ")";
        return p + " (" + p + " kernels: cuBLASLt GEMMs, " + attention +
               ", layernorm, GELU, residual, embedding, classifier)";
      }
      default: return "fp32 (cuBLAS TF32 math off)";
    }
  }

  std::map<std::string, uint64_t> kernel_launches() const { return launch_->launches(); }

 protected:
  cuda::CudaLaunch& launch() override { return *launch_; }
  bool runs_mma_16816() const override { return compute_capability_ >= kMma16816Capability; }

 private:
  bool tf32() const { return arithmetic() == Arithmetic::tf32; }
  static void report_release_error(cudaError_t err) {
    if (err != cudaSuccess)
      std::fprintf(stderr, "CUDA error at %s:%d: releasing memory: %s\n", __FILE__, __LINE__, cudaGetErrorString(err));
  }

  int device_;
  std::string uuid_;
  int compute_capability_;  // major * 10 + minor
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::unique_ptr<cuda::CudaLaunch> launch_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device, const PrecisionPath& path) {
  return std::make_unique<CudaBackend>(device, path);
}

std::map<std::string, uint64_t> cuda_kernel_launches(const Backend& backend) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  return cuda == nullptr ? std::map<std::string, uint64_t>{} : cuda->kernel_launches();
}

}  // namespace eth::kernels

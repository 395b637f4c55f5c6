// The CUDA backend: device memory, one stream, one cuBLAS handle, and the op families of
// kernels/cuda/*.cu behind the Backend interface.
#include <cmath>
#include <cstdio>

#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_ops.cuh"
#include "kernels/cuda/cuda_probe.hpp"

namespace eth::kernels {
namespace {

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, CudaBackendOptions options)
      : device_(device), uuid_(cuda_device_props(device).uuid), options_(options) {
    CUDA_CHECK(cudaSetDevice(device_));
    // Non-blocking: no implicit synchronisation with the legacy default stream, so every copy
    // below is explicitly enqueued on stream_.
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&cublas_));
    CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    // DEFAULT math keeps fp32 GEMMs in fp32; TF32 lets cuBLAS round their inputs to TF32.
    CUBLAS_CHECK(cublasSetMathMode(cublas_, options_.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    scratch_ = std::make_unique<cuda::Scratch>(stream_);
  }

  ~CudaBackend() override {
    scratch_.reset();
    cudaStreamSynchronize(stream_);
    cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
  }

  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override { return options_.tf32 ? "cuda-tf32" : "cuda"; }
  bool host_addressable() const override { return false; }
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
  void fill_zero(float* x, size_t n) override {
    CUDA_CHECK(cudaMemsetAsync(x, 0, n * sizeof(float), stream_));
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
  Precision precision() const override { return options_.tf32 ? Precision::tf32 : Precision::fp32; }
  std::string precision_path() const override {
    return options_.tf32 ? "tf32 (cuBLAS GEMMs on TF32 tensor cores, fp32 elsewhere)" : "fp32 (cuBLAS TF32 math off)";
  }
  void round_to_bf16(float* out, const float* inp, size_t n) override { cuda::round_to_bf16(stream_, out, inp, n); }

  // ---- GPT-2 forward and backward --------------------------------------------------------
  void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                       int B, int T, int C) override {
    cuda::encoder_forward(stream_, out, tokens, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                        int B, int T, int C) override {
    cuda::encoder_backward(stream_, *scratch_, dwte, dwpe, dout, tokens, B, T, C);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, int N, int C) override {
    cuda::layernorm_forward(stream_, out, mean, rstd, inp, weight, bias, N, C);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, int N, int C) override {
    cuda::layernorm_backward(stream_, *scratch_, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                      int N, int C, int OC) override {
    cuda::matmul_forward(cublas_, stream_, out, inp, weight, bias, N, C, OC);
  }
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, int N, int C, int OC) override {
    cuda::matmul_backward(cublas_, stream_, *scratch_, dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }
  // The blocked kernel at every T: on a GPU the materialised one would only cost memory.
  AttentionPath attention_path(int) const override { return AttentionPath::blocked; }
  void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C,
                         int NH) override {
    cuda::attention_forward(stream_, out, lse, qkv, B, T, C, NH);
  }
  void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                          const float* lse, int B, int T, int C, int NH) override {
    cuda::attention_backward(stream_, dqkv, dout, qkv, out, lse, B, T, C, NH);
  }
  void attention_decode(float* out, float* k_cache, float* v_cache, const float* qkv_new, int B, int Tn, int T0,
                        int Tmax, int C, int NH) override {
    cuda::attention_decode(stream_, out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH);
  }
  void gelu_forward(float* out, const float* inp, size_t n) override { cuda::gelu_forward(stream_, out, inp, n); }
  void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n) override {
    cuda::gelu_backward(stream_, dinp, inp, dout, n);
  }
  void residual_forward(float* out, const float* a, const float* b, size_t n) override {
    cuda::residual_forward(stream_, out, a, b, n);
  }
  void crossentropy_forward_backward(float* sample_losses, float* logits, const int32_t* targets,
                                     int B, int T, int V, int Vp, float dlogits_scale) override {
    cuda::crossentropy_forward_backward(stream_, *scratch_, sample_losses, logits, targets, B, T, V, Vp,
                                        dlogits_scale);
  }

  void accumulate_sum(double* total, const float* x, size_t n) override {
    cuda::accumulate_sum(stream_, total, x, n);
  }

  // ---- optimizer -------------------------------------------------------------------------
  double sum_of_squares(const float* x, size_t n) override {
    return cuda::sum_of_squares(stream_, *scratch_, x, n);
  }
  void adamw_update(float* params, const float* grads, float* m, float* v, size_t n,
                    const AdamWParams& hp) override {
    // The bias corrections exactly as the CPU twin computes them.
    const float correction1 = 1.f - static_cast<float>(std::pow(static_cast<double>(hp.beta1), hp.step));
    const float correction2 = 1.f - static_cast<float>(std::pow(static_cast<double>(hp.beta2), hp.step));
    cuda::adamw_update(stream_, params, grads, m, v, n, hp.lr, hp.beta1, hp.beta2, hp.eps, hp.weight_decay,
                       hp.grad_scale, correction1, correction2);
  }

 private:
  static void report_release_error(cudaError_t err) {
    if (err != cudaSuccess)
      std::fprintf(stderr, "CUDA error at %s:%d: releasing memory: %s\n", __FILE__, __LINE__, cudaGetErrorString(err));
  }

  int device_;
  std::string uuid_;
  CudaBackendOptions options_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::unique_ptr<cuda::Scratch> scratch_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device, CudaBackendOptions options) {
  return std::make_unique<CudaBackend>(device, options);
}

}  // namespace eth::kernels

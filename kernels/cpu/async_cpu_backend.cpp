// The CPU backend in asynchronous mode (ETH_BACKEND=cpu-async): each call is queued and run,
// in call order, on one worker thread, exactly as a CUDA stream runs kernels. The host thread
// runs ahead until it waits on an event, so a caller that reads or overwrites a buffer without
// the event the execution model asks for (kernels/device.hpp) computes a wrong result on the
// CPU, where CI sees it, instead of only on a GPU.
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu/work_queue.hpp"

namespace eth::kernels {
namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class AsyncCpuBackend final : public Backend {
 public:
  explicit AsyncCpuBackend(size_t device_memory_bytes) : cpu_(make_cpu_backend(device_memory_bytes)) {}

  AsyncCpuBackend(const AsyncCpuBackend&) = delete;
  AsyncCpuBackend& operator=(const AsyncCpuBackend&) = delete;

  std::string name() const override { return "cpu-async"; }
  bool host_addressable() const override { return true; }

  // ---- memory --------------------------------------------------------------------------
  void* allocate(size_t bytes) override { return cpu_->allocate(bytes); }
  void release(void* ptr) override {
    synchronize();
    cpu_->release(ptr);
  }
  void* allocate_pinned(size_t bytes) override { return cpu_->allocate_pinned(bytes); }
  size_t peak_allocated_bytes() const override { return cpu_->peak_allocated_bytes(); }
  size_t allocated_bytes() const override { return cpu_->allocated_bytes(); }
  size_t free_memory_bytes() const override { return cpu_->free_memory_bytes(); }
  void release_pinned(void* ptr) override {
    synchronize();
    cpu_->release_pinned(ptr);
  }
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override {
    // The caller may reuse host_src at once: take the bytes now.
    auto bytes_now = std::make_shared<std::vector<char>>(static_cast<const char*>(host_src),
                                                         static_cast<const char*>(host_src) + bytes);
    enqueue([dst, bytes_now] { std::memcpy(dst, bytes_now->data(), bytes_now->size()); });
  }
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override {
    synchronize();
    std::memcpy(host_dst, src, bytes);
  }
  void copy_to_device_async(void* dst, const void* pinned_src, size_t bytes) override {
    enqueue([=] { std::memcpy(dst, pinned_src, bytes); });
  }
  void copy_to_host_async(void* pinned_dst, const void* src, size_t bytes) override {
    enqueue([=] { std::memcpy(pinned_dst, src, bytes); });
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    enqueue([=] { std::memcpy(dst, src, bytes); });
  }
  void fill_zero(Tensor x, size_t n) override {
    enqueue([=, this] { cpu_->fill_zero(x, n); });
  }

  // ---- ordering ------------------------------------------------------------------------
  // An event is the count of operations enqueued when it was recorded; it is done once the
  // worker has completed that many. A timed one is recorded as an operation of its own that
  // notes when the worker reached it.
  struct AsyncEvent {
    uint64_t count = 0;
    bool timed = false;
    double at_ms = 0;  // written by the worker, read by the host after waiting for `count`
  };
  void synchronize() override { queue_.synchronize(); }
  void* create_event() override { return new AsyncEvent; }
  void* create_timed_event() override { return new AsyncEvent{0, true, 0}; }
  void destroy_event(void* event) override { delete static_cast<AsyncEvent*>(event); }
  void record_event(void* event) override {
    auto* e = static_cast<AsyncEvent*>(event);
    if (e->timed) enqueue([e] { e->at_ms = now_ms(); });
    e->count = queue_.enqueued();
  }
  bool event_done(void* event) override { return queue_.completed(static_cast<AsyncEvent*>(event)->count); }
  void wait_event(void* event) override { queue_.wait_for(static_cast<AsyncEvent*>(event)->count); }
  double elapsed_ms(void* start, void* end) override {
    wait_event(start);
    wait_event(end);
    return static_cast<AsyncEvent*>(end)->at_ms - static_cast<AsyncEvent*>(start)->at_ms;
  }
  void stall(double ms) override {
    enqueue([ms] { std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms)); });
  }
  void enqueue_host_function(std::function<void()> fn) override { enqueue(std::move(fn)); }

  // ---- precision -----------------------------------------------------------------------
  Precision precision() const override { return cpu_->precision(); }
  std::string precision_path() const override { return cpu_->precision_path(); }
  void convert(Tensor out, ConstTensor inp, size_t n) override {
    enqueue([=, this] { cpu_->convert(out, inp, n); });
  }
  void round_to_bf16(float* out, const float* inp, size_t n) override {
    enqueue([=, this] { cpu_->round_to_bf16(out, inp, n); });
  }

  // ---- GPT-2 forward and backward --------------------------------------------------------
  void encoder_forward(Tensor out, const int32_t* tokens, ConstTensor wte, ConstTensor wpe, int B, int T,
                       int C) override {
    enqueue([=, this] { cpu_->encoder_forward(out, tokens, wte, wpe, B, T, C); });
  }
  void encoder_backward(float* dwte, float* dwpe, ConstTensor dout, const int32_t* tokens, int B, int T,
                        int C) override {
    enqueue([=, this] { cpu_->encoder_backward(dwte, dwpe, dout, tokens, B, T, C); });
  }
  void layernorm_forward(Tensor out, float* mean, float* rstd, ConstTensor inp, ConstTensor weight,
                         ConstTensor bias, int N, int C) override {
    enqueue([=, this] { cpu_->layernorm_forward(out, mean, rstd, inp, weight, bias, N, C); });
  }
  void layernorm_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                          ConstTensor weight, const float* mean, const float* rstd, int N, int C) override {
    enqueue([=, this] { cpu_->layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C); });
  }
  void matmul_forward(Tensor out, ConstTensor inp, ConstTensor weight, ConstTensor bias, int N, int C,
                      int OC) override {
    enqueue([=, this] { cpu_->matmul_forward(out, inp, weight, bias, N, C, OC); });
  }
  void matmul_backward(Tensor dinp, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                       ConstTensor weight, int N, int C, int OC) override {
    enqueue([=, this] { cpu_->matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC); });
  }
  AttentionPath attention_path(int T) const override { return cpu_->attention_path(T); }
  void attention_forward(Tensor out, float* saved, ConstTensor qkv, int B, int T, int C, int NH) override {
    enqueue([=, this] { cpu_->attention_forward(out, saved, qkv, B, T, C, NH); });
  }
  void attention_backward(Tensor dqkv, ConstTensor dout, ConstTensor qkv, ConstTensor out, const float* saved,
                          int B, int T, int C, int NH) override {
    enqueue([=, this] { cpu_->attention_backward(dqkv, dout, qkv, out, saved, B, T, C, NH); });
  }
  void attention_decode(Tensor out, Tensor k_cache, Tensor v_cache, ConstTensor qkv_new, int B, int Tn, int T0,
                        int Tmax, int C, int NH) override {
    enqueue([=, this] { cpu_->attention_decode(out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, C, NH); });
  }
  void gelu_forward(Tensor out, ConstTensor inp, size_t n) override {
    enqueue([=, this] { cpu_->gelu_forward(out, inp, n); });
  }
  void gelu_backward(Tensor dinp, ConstTensor inp, ConstTensor dout, size_t n) override {
    enqueue([=, this] { cpu_->gelu_backward(dinp, inp, dout, n); });
  }
  void residual_forward(Tensor out, ConstTensor a, ConstTensor b, size_t n) override {
    enqueue([=, this] { cpu_->residual_forward(out, a, b, n); });
  }
  void crossentropy_forward_backward(float* sample_losses, Tensor logits, const int32_t* targets, int B, int T,
                                     int V, int Vp, float dlogits_scale) override {
    enqueue([=, this] { cpu_->crossentropy_forward_backward(sample_losses, logits, targets, B, T, V, Vp,
            dlogits_scale); });
  }
  void accumulate_sum(double* total, const float* x, size_t n) override {
    enqueue([=, this] { cpu_->accumulate_sum(total, x, n); });
  }

  // ---- optimizer -------------------------------------------------------------------------
  double sum_of_squares(const float* x, size_t n) override {
    double result = 0.0;
    enqueue([this, &result, x, n] { result = cpu_->sum_of_squares(x, n); });
    synchronize();
    return result;
  }
  void adamw_update(float* params, bf16* param_copies, const float* grads, float* m, float* v,
                    const AdamWSegment* segments, size_t count, const AdamWParams& hp) override {
    enqueue([=, this] { cpu_->adamw_update(params, param_copies, grads, m, v, segments, count, hp); });
  }

 private:
  void enqueue(std::function<void()> op) { queue_.enqueue(std::move(op)); }

  std::unique_ptr<Backend> cpu_;
  WorkQueue queue_;  // last: its thread runs operations on cpu_
};

}  // namespace

std::unique_ptr<Backend> make_async_cpu_backend(size_t device_memory_bytes) {
  return std::make_unique<AsyncCpuBackend>(device_memory_bytes);
}

}  // namespace eth::kernels

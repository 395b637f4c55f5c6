#include "kernels/emulated/cuda_emulated_backend.hpp"

#include <cstring>
#include <stdexcept>

#include "kernels/forwarding_device.hpp"
#include "kernels/gpu_ops/attention.hpp"
#include "kernels/gpu_ops/attention_decode.hpp"
#include "kernels/gpu_ops/classifier16.hpp"
#include "kernels/gpu_ops/flash_attention16.hpp"
#include "kernels/gpu_ops/layernorm16.hpp"
#include "kernels/gpu_ops/matmul16.hpp"
#include "kernels/gpu_ops/crossentropy.hpp"
#include "kernels/gpu_ops/elementwise.hpp"
#include "kernels/gpu_ops/llama_elementwise.hpp"
#include "kernels/gpu_ops/encoder.hpp"
#include "kernels/gpu_ops/gpu_ops_backend.hpp"
#include "kernels/gpu_ops/layernorm.hpp"
#include "kernels/gpu_ops/matmul.hpp"
#include "kernels/gpu_ops/optimizer.hpp"

namespace eth::kernels {

// Memory, copies and events are the synchronous CPU backend's (host memory); the GPT operations
// are the GPU ops through the interpreter, and only they: the base forwards the device alone
// (forwarding_device.hpp), so no operation can fall through to the CPU backend.
class CudaEmulatedBackend final : public gpu_ops::GpuOpsBackend<ForwardingDevice<Backend>, emulated::HostLaunch> {
 public:
  // The launch's scratch and counters come from the host backend, so that its allocator's peak
  // counts them as a GPU's would.
  CudaEmulatedBackend(std::unique_ptr<Backend> host, const PrecisionPath& path)
      : GpuOpsBackend(path, *host), host_(std::move(host)), launch_(host_.get()) {
    if (path.arithmetic == Arithmetic::tf32)
      throw std::invalid_argument("--precision tf32: the kernel interpreter (ETH_BACKEND=cuda-emulated) has no TF32 "
                                  "GEMMs (its GEMMs are OpenBLAS's fp32): use fp32 or bf16");
  }
  ~CudaEmulatedBackend() override { release_fallback(); }

  std::string name() const override {
    return precision() == Precision::fp32 ? "cuda-emulated" : std::string("cuda-emulated-") + precision_name(precision());
  }
  OpsDevice ops_device() const override { return OpsDevice::interpreter; }
  std::string precision_path() const override {
    if (precision() != Precision::fp32) {
      const std::string p = precision_name(precision());
      return p + " (" + p +
             " kernels, in the kernel interpreter: flash attention at head sizes 64 and 128 (fp32 compute at "
             "others), layernorm, GELU, residual, embedding, classifier; GEMMs on the CPU at cuBLASLt's contract)";
    }
    return "fp32 (the CUDA backend's kernels in the kernel interpreter; GEMMs on the CPU at cuBLAS's contract)";
  }
  // Poisoned, as the interpreter's shared memory: an output a kernel fails to write stays NaN.
  void* allocate(size_t bytes) override {
    void* p = ForwardingDevice<Backend>::allocate(bytes);
    if (p != nullptr) std::memset(p, 0xff, bytes);
    return p;
  }

  emulated::HostLaunch& host_launch() { return launch_; }

 protected:
  emulated::HostLaunch& launch() override { return launch_; }
  bool runs_mma_16816() const override { return true; }  // the interpreter runs it at any precision

 private:
  std::unique_ptr<Backend> host_;
  emulated::HostLaunch launch_;
};

std::unique_ptr<Backend> make_cuda_emulated_backend(size_t device_memory_bytes, const PrecisionPath& path) {
  return std::make_unique<CudaEmulatedBackend>(make_cpu_backend(device_memory_bytes), path);
}

emulated::HostLaunch* cuda_emulated_launch(Backend& backend) {
  auto* emulated = dynamic_cast<CudaEmulatedBackend*>(&backend);
  return emulated == nullptr ? nullptr : &emulated->host_launch();
}

}  // namespace eth::kernels

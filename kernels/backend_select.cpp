#include "kernels/backend_select.hpp"

#include <stdexcept>

#include "kernels/cuda_capability.hpp"
#include "kernels/gpu_binding.hpp"
#include "kernels/twin_backend.hpp"
#ifdef ETH_HAVE_SIMT_INTERPRETER
#include "kernels/emulated/cuda_emulated_backend.hpp"
#endif
#ifdef ETH_HAVE_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_probe.hpp"
#endif

namespace eth::kernels {
namespace {

// ETH_CPU_DEVICE_MEMORY: the bytes of the device the CPU backend acts as; 0 (unset): no limit.
size_t cpu_device_memory(const DeviceSettings& settings) {
  const std::string& text = settings.cpu_device_memory;
  if (text.empty()) return 0;
  if (text.find_first_not_of("0123456789") != std::string::npos || text.size() > 19)
    throw std::invalid_argument("ETH_CPU_DEVICE_MEMORY: expected a number of bytes, got '" + text + "'");
  return static_cast<size_t>(std::stoull(text));
}

// A device's backend for `path`, made by make(path): for it where the path computes on the
// device's kernels, else (a 16-bit path in fp32 arithmetic) the twin over the device's fp32 backend.
template <class Make>
std::unique_ptr<Backend> on_path(const PrecisionPath& path, Make make) {
  if (path.storage() != ElementType::f32 && path.arithmetic == Arithmetic::fp32)
    return make_twin_backend(make(PrecisionPath{}), path.precision);
  return make(path);
}

// The CPU backends have fp32 arithmetic only: bf16 is their rounding twin, TF32 does not exist.
BackendChoice on_cpu(std::unique_ptr<Backend> cpu, const std::string& note, const PrecisionPath& path) {
  if (path.precision == Precision::tf32)
    throw std::invalid_argument("--precision tf32: expected a GPU with TF32 tensor cores (compute capability " +
                                capability_name(capability_for(Arithmetic::tf32)) + " or later), got the CPU backend (" +
                                cpu->name() + "): use fp32 or bf16");
  if (path.storage() != ElementType::f32) return {make_twin_backend(std::move(cpu), path.precision), note};
  return {std::move(cpu), note};
}

// The CUDA backend's kernels in the interpreter, at the precisions a GPU of compute capability
// 8.0 has but TF32 (the interpreter's GEMMs are OpenBLAS's fp32: the backend refuses it).
BackendChoice on_interpreter(const PrecisionPath& path, const DeviceSettings& settings) {
#ifdef ETH_HAVE_SIMT_INTERPRETER
  const std::string note = "running the CUDA backend's kernels in the kernel interpreter (ETH_BACKEND=cuda-emulated)";
  const size_t memory = cpu_device_memory(settings);
  return {on_path(path, [&](const PrecisionPath& p) { return make_cuda_emulated_backend(memory, p); }), note};
#else
  (void)path;
  (void)settings;
  throw std::invalid_argument("ETH_BACKEND=cuda-emulated: expected a build with the kernel interpreter (Boost.Context), "
                              "got one without");
#endif
}

}  // namespace

PrecisionPath rank_path(const PrecisionPath& planned, const DeviceRates& rates, const DeviceSettings& settings) {
  const std::string& s = settings.bf16_kernels;
  if (!s.empty() && s != "0" && s != "1")
    throw std::invalid_argument("ETH_BF16_KERNELS: expected 0 or 1, got '" + s + "'");
  if (planned.arithmetic != Arithmetic::bf16 || s != "0") return planned;
  DeviceRates without_bf16 = rates;
  without_bf16.bf16 = 0;
  return precision_path(planned.precision, without_bf16);
}

void bind_gpu_before_mpi(const DeviceSettings& settings) {
#ifdef ETH_HAVE_CUDA
  const LauncherPlace& place = settings.launcher;
  const std::string& wanted = settings.backend;
  if (place.local_rank < 0 || wanted == "cpu" || wanted == "cpu-async" || wanted == "cuda-emulated") return;
  std::string why;
  const int visible = usable_cuda_devices(&why);
  if (visible == 0) return;
  const int local_ranks = place.local_ranks > 0 ? place.local_ranks : place.local_rank + 1;
  try {
    set_cuda_device(bind_gpu(settings.cuda_devices.c_str(), place.local_rank, local_ranks, visible).device);
  } catch (const std::invalid_argument&) {
    // select_backend, after MPI_Init, reports it on every rank with the job's true local size.
  }
#endif
}

BackendChoice select_backend(int local_rank, int local_ranks, const PrecisionPath& path, const DeviceSettings& settings) {
  const std::string& wanted = settings.backend;
  const size_t cpu_memory = cpu_device_memory(settings);
  if (wanted == "cpu") return on_cpu(make_cpu_backend(cpu_memory), "running on the CPU backend (ETH_BACKEND=cpu)", path);
  if (wanted == "cpu-async")
    return on_cpu(make_async_cpu_backend(cpu_memory),
                  "running on the CPU backend in asynchronous mode (ETH_BACKEND=cpu-async)", path);
  if (wanted == "cuda-emulated") return on_interpreter(path, settings);
  if (!wanted.empty() && wanted != "auto" && wanted != "cuda")
    throw std::invalid_argument("ETH_BACKEND: expected auto, cuda, cuda-emulated, cpu or cpu-async, got '" + wanted + "'");
#ifdef ETH_HAVE_CUDA
  std::string why;
  const int gpus = usable_cuda_devices(&why);
  if (gpus == 0) {
    if (wanted == "cuda") throw std::invalid_argument("ETH_BACKEND=cuda: expected a usable GPU, found none (" + why + ")");
    return on_cpu(make_cpu_backend(cpu_memory), "no usable GPU (" + why + "): running on the CPU backend", path);
  }
  const GpuBinding gpu = bind_gpu(settings.cuda_devices.c_str(), local_rank, local_ranks, gpus);
  const CudaDeviceProps props = cuda_device_props(gpu.device);
  // A GPU below the capability the path's arithmetic needs (kernels/cuda_capability.hpp) throws
  // here, in one line: the path is not changed behind the planner's back.
  std::unique_ptr<Backend> cuda = on_path(path, [&](const PrecisionPath& p) { return make_cuda_backend(gpu.device, p); });
  return {std::move(cuda), "running on the CUDA backend: local rank " + std::to_string(local_rank) + " on " + props.name +
                               " " + props.uuid + " (PCI " + props.pci_bus_id + "), device " + std::to_string(gpu.device) +
                               " of " + std::to_string(gpus) + " it sees: " + gpu.how};
#else
  (void)local_rank;
  (void)local_ranks;
  if (wanted == "cuda") throw std::invalid_argument("ETH_BACKEND=cuda: expected a build with CUDA, got a CPU-only build");
  return on_cpu(make_cpu_backend(cpu_memory), "built without CUDA: running on the CPU backend", path);
#endif
}

}  // namespace eth::kernels

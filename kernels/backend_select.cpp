#include "kernels/backend_select.hpp"

#include <stdexcept>

#include "kernels/twin_backend.hpp"
#include "kernels/gpu_binding.hpp"
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

// Whether a 16-bit path runs on a device's kernels of its format: fp16 where its arithmetic is
// fp16 (a device type with fp16 tensor cores); bf16 where its arithmetic is bf16 (a device type
// with bf16 units) and ETH_BF16_KERNELS is 1 (the default); 0 takes the bf16 twin over the fp32
// kernels there too (what a V100 or T4 runs): the same bf16 bytes, computed in fp32, so that the
// two paths can be compared within one job.
bool on_16bit_kernels(const PrecisionPath& path, const DeviceSettings& settings) {
  if (path.precision == Precision::fp16) return path.arithmetic == Arithmetic::fp16;
  if (path.precision != Precision::bf16 || path.arithmetic != Arithmetic::bf16) return false;
  const std::string& s = settings.bf16_kernels;
  if (s.empty() || s == "1") return true;
  if (s == "0") return false;
  throw std::invalid_argument("ETH_BF16_KERNELS: expected 0 or 1, got '" + s + "'");
}

// The CPU backends have fp32 arithmetic only: bf16 is their rounding twin, TF32 does not exist.
BackendChoice on_cpu(std::unique_ptr<Backend> cpu, const std::string& note, const PrecisionPath& path) {
  if (path.precision == Precision::tf32)
    throw std::invalid_argument("--precision tf32: expected a GPU with TF32 tensor cores (compute capability 8.0 or "
                                "later), got the CPU backend (" + cpu->name() + "): use fp32 or bf16");
  if (path.storage() != ElementType::f32) return {make_twin_backend(std::move(cpu), path.precision), note};
  return {std::move(cpu), note};
}

// The CUDA backend's kernels in the interpreter, at the precisions a GPU of compute capability
// 8.0 has but TF32 (the interpreter's GEMMs are OpenBLAS's fp32).
BackendChoice on_interpreter(const PrecisionPath& path, const DeviceSettings& settings) {
#ifdef ETH_HAVE_SIMT_INTERPRETER
  const std::string note = "running the CUDA backend's kernels in the kernel interpreter (ETH_BACKEND=cuda-emulated)";
  if (path.precision == Precision::tf32)
    throw std::invalid_argument("--precision tf32: the kernel interpreter (ETH_BACKEND=cuda-emulated) has no TF32 "
                                "GEMMs: use fp32 or bf16");
  const size_t memory = cpu_device_memory(settings);
  if (on_16bit_kernels(path, settings)) return {make_cuda_emulated_backend(memory, path.precision), note};
  std::unique_ptr<Backend> emulated = make_cuda_emulated_backend(memory);
  if (path.storage() != ElementType::f32) return {make_twin_backend(std::move(emulated), path.precision), note};
  return {std::move(emulated), note};
#else
  (void)path;
  (void)settings;
  throw std::invalid_argument("ETH_BACKEND=cuda-emulated: expected a build with the kernel interpreter (Boost.Context), "
                              "got one without");
#endif
}

}  // namespace

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
  if (path.precision == Precision::tf32 && props.compute_capability < 80)
    throw std::invalid_argument("--precision tf32: expected a GPU with TF32 tensor cores (compute capability 8.0 or "
                                "later), got " + props.name + " (" + std::to_string(props.compute_capability / 10) + "." +
                                std::to_string(props.compute_capability % 10) + "): use fp32 or bf16");
  // 16-bit: on its kernels (bf16 from compute capability 8.0 on, fp16 from 7.0) where the path's
  // arithmetic is of its format, else the twin over the fp32 kernels.
  std::unique_ptr<Backend> cuda;
  const int needs = path.precision == Precision::fp16 ? 70 : 80;
  if (on_16bit_kernels(path, settings) && props.compute_capability >= needs)
    cuda = make_cuda_backend(gpu.device, {.precision = path.precision});
  else if (path.storage() != ElementType::f32)  // a 16-bit path without its kernels
    cuda = make_twin_backend(make_cuda_backend(gpu.device), path.precision);
  else
    cuda = make_cuda_backend(gpu.device, {.precision = path.precision});
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

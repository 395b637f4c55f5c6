// ETH_BACKEND=cuda-emulated: the CUDA backend's ops (kernels/gpu_ops) with their custom kernels
// run in the kernel interpreter on host memory, and their GEMMs and sort on the CPU at cuBLAS's
// and CUB's contracts (kernels/emulated/host_launch.hpp). A full Backend, in every build, with or
// without nvcc: a stage, a plan, the trainer and the oracle run on it, so that CI checks the
// launches a GPU runs. Memory starts as NaN; every operation has run when its call returns.
#pragma once

#include <memory>

#include "kernels/backend.hpp"
#include "kernels/emulated/host_launch.hpp"

namespace eth::kernels {

// device_memory_bytes: as make_cpu_backend's, for the host memory it computes in. path: fp32, or
// bf16 or fp16 in their arithmetic, on their kernels (as make_cuda_backend's; no TF32: the
// interpreter's GEMMs are OpenBLAS's fp32).
std::unique_ptr<Backend> make_cuda_emulated_backend(size_t device_memory_bytes = 0, const PrecisionPath& path = {});
// The launcher of a backend made by make_cuda_emulated_backend, with its counts (what it
// launched since it was made or last reset); null for any other backend.
emulated::HostLaunch* cuda_emulated_launch(Backend& backend);

}  // namespace eth::kernels

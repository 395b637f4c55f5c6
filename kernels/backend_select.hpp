// Chooses the backend a process computes with, once, at start-up, on the precision path its
// device type takes in the job (kernels/precision.hpp, resolved by the caller): bf16 runs on the
// device's bf16 kernels where the path's arithmetic is bf16 and the device has them (a GPU of
// compute capability 8.0 on, or the interpreter), else on the bf16 twin over the fp32 backend
// (kernels/twin_backend.hpp: the CPU's bf16 path, V100s and T4s); tf32 needs a GPU that has it.
//
// The environment's settings come in `settings` (kernels/device_settings.hpp):
//
//   ETH_BACKEND       unset or "auto": the CUDA backend when a GPU is usable, else the CPU one;
//                     "cuda": the CUDA backend, an error without a GPU; "cpu": the CPU backend;
//                     "cpu-async": the CPU backend in asynchronous mode (kernels/device.hpp);
//                     "cuda-emulated": the CUDA backend's kernels in the kernel interpreter, on
//                     host memory (kernels/emulated/cuda_emulated_backend.hpp)
//   ETH_CUDA_DEVICES  the GPU of each rank on a host, by its local rank: a comma list with one
//                     entry per local rank ("0,1,0,1"), or one entry for all ("0": every rank
//                     on GPU 0, sharing it). Unset: the rules of gpu_binding.hpp (the one GPU a
//                     rank sees, else GPU <local rank>).
//   ETH_BF16_KERNELS  1 (default): a bf16 path whose arithmetic is bf16 runs on the device's bf16
//                     kernels; 0: in fp32 on the same bf16 bytes there too (to compare the two)
//   ETH_CPU_DEVICE_MEMORY  bytes: the CPU backend behaves as a device of that size (testing)
#pragma once

#include <memory>
#include <string>

#include "kernels/backend.hpp"
#include "kernels/device_settings.hpp"
#include "kernels/precision.hpp"

namespace eth::kernels {

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string note;  // one line for the log: what was chosen and why
};

// For the rank that is `local_rank` of `local_ranks` ranks of its job on this host. Throws
// std::invalid_argument, with one line saying what was expected, for a bad setting, a GPU asked
// for and missing, fewer GPUs than local ranks that need one of their own, or a precision the
// device does not have (tf32 on the CPU or before Ampere).
BackendChoice select_backend(int local_rank, int local_ranks, const PrecisionPath& path, const DeviceSettings& settings);

// Before MPI_Init, where the launcher says the node-local rank (gpu_binding.hpp): makes the GPU
// the rank will compute on current, so that MPI and its transports, which may create a CUDA
// context during MPI_Init, create it there rather than on GPU 0. Does nothing without a GPU or
// a launcher's variables; a binding error is left for select_backend to report after MPI_Init.
void bind_gpu_before_mpi(const DeviceSettings& settings);

}  // namespace eth::kernels

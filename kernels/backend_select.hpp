// Chooses the backend a process computes with, once, at start-up, on the precision path it
// computes on (kernels/precision.hpp: its device type's in the job, through rank_path): the
// device's backend made for the path where the path's arithmetic is the device's own (a GPU's
// 16-bit or TF32 kernels, the interpreter's), the twin over its fp32 backend where a 16-bit path
// computes in fp32 (kernels/twin_backend.hpp: V100s and T4s in bf16), and on the CPU, which has
// fp32 arithmetic only, the twin for every 16-bit path (the CPU stands in for any device). A GPU
// whose compute capability cannot run the path's arithmetic (kernels/cuda_capability.hpp) is an
// error, never a quiet change of path.
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
//   ETH_BF16_KERNELS  1 (default): a bf16 path keeps its device type's arithmetic; 0: a bf16
//                     path on bf16 units computes in fp32 instead (rank_path), on the same bf16
//                     bytes, so that one job can compare the kernels with the twin
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

// The path this process computes on: `planned` (its device type's in the job, on a device of
// `rates`), but in fp32 arithmetic at the fp32 peak where ETH_BF16_KERNELS=0 sets its bf16 units
// aside. Throws std::invalid_argument for a value of ETH_BF16_KERNELS other than 0 or 1.
PrecisionPath rank_path(const PrecisionPath& planned, const DeviceRates& rates, const DeviceSettings& settings);

// For the rank that is `local_rank` of `local_ranks` ranks of its job on this host. Throws
// std::invalid_argument, with one line saying what was expected, for a bad setting, a GPU asked
// for and missing, fewer GPUs than local ranks that need one of their own, or a path the device
// cannot compute (tf32 on the CPU, a GPU below the compute capability of the path's arithmetic).
BackendChoice select_backend(int local_rank, int local_ranks, const PrecisionPath& path, const DeviceSettings& settings);

// Before MPI_Init, where the launcher says the node-local rank (gpu_binding.hpp): makes the GPU
// the rank will compute on current, so that MPI and its transports, which may create a CUDA
// context during MPI_Init, create it there rather than on GPU 0. Does nothing without a GPU or
// a launcher's variables; a binding error is left for select_backend to report after MPI_Init.
void bind_gpu_before_mpi(const DeviceSettings& settings);

}  // namespace eth::kernels

// The environment variables the programs act on, read here, once, at start-up, into the settings
// values that are handed down (kernels/device_settings.hpp, mpi_topology/comm_settings.hpp):
// nothing under kernels/, mpi_topology/ or lib/ reads the environment. eth_train --help lists
// them (kEnvironmentHelp).
#pragma once

#include <cstdlib>
#include <string>

#include "kernels/device_settings.hpp"
#include "kernels/gpu_binding.hpp"
#include "mpi_topology/comm_settings.hpp"

namespace eth {

struct Environment {
  kernels::DeviceSettings device;
  CommSettings comm;
};

constexpr const char* kEnvironmentHelp = R"(Environment (the same on every rank):
  ETH_BACKEND=auto|cuda|cuda-emulated|cpu|cpu-async
        auto (default): CUDA when a GPU is usable, else the CPU; cuda: an error
        without a GPU; cuda-emulated: the CUDA backend's kernels in the kernel
        interpreter on the CPU (tests: slow); cpu-async: the CPU backend with
        every operation queued on a worker thread, as on a GPU stream (tests)
  ETH_BF16_KERNELS=1|0
        1 (default): bf16 on a device type with bf16 units runs on the device's
        bf16 kernels; 0: in fp32 on the same bf16 bytes there too (to compare)
  ETH_CUDA_DEVICES=LIST
        the GPU of each rank by its rank on the host: one entry per local rank
        (0,1,0,1) or one for all (0); unset: a rank that sees one GPU takes it
        (srun --gpus-per-task=1), one that sees several takes GPU <local rank>
  ETH_CPU_DEVICE_MEMORY=BYTES
        the CPU backend acts as a device of that many bytes, refusing
        allocations past it as cudaMalloc would (tests)
  ETH_MPI_CUDA_AWARE=auto|0|1
        auto (default): stage transfers hand MPI device buffers when it says it
        is CUDA-aware; 0: always through pinned host memory; 1: required
  ETH_NCCL=auto|0|1|emulated
        auto (default): sums inside a node on NCCL when every rank there has a
        GPU of its own (by UUID); 0: MPI always; 1: NCCL or an error; emulated:
        the NCCL path on its CPU emulation (ETH_BACKEND=cpu-async; tests)
  NCCL_BUFFSIZE=BYTES
        NCCL's own; the memory check counts each communicator's buffers by it
  OMP_NUM_THREADS=N
        threads per rank; unset: each rank takes its share of the host's cores
  The launcher's variables say where a rank sits on its host before MPI starts
  (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, Slurm's SLURM_LOCALID, MPICH's
  MPI_LOCALRANKID): its GPU is made current before MPI_Init.
)";

inline std::string environment_variable(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

inline Environment read_environment() {
  Environment e;
  e.device.backend = environment_variable("ETH_BACKEND");
  e.device.bf16_kernels = environment_variable("ETH_BF16_KERNELS");
  e.device.cuda_devices = environment_variable("ETH_CUDA_DEVICES");
  e.device.cpu_device_memory = environment_variable("ETH_CPU_DEVICE_MEMORY");
  e.device.launcher = kernels::launcher_place(std::getenv);
  e.comm.nccl = environment_variable("ETH_NCCL");
  e.comm.mpi_cuda_aware = environment_variable("ETH_MPI_CUDA_AWARE");
  e.comm.nccl_buffsize = environment_variable("NCCL_BUFFSIZE");
  e.comm.omp_num_threads = environment_variable("OMP_NUM_THREADS");
  return e;
}

}  // namespace eth

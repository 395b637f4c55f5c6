// Which GPU a rank computes on, decided once at start-up from what the rank can see and what its
// launcher says (docs/usage.md, "GPUs and launchers"). Pure apart from the environment it is
// handed, so that every launcher's case is a unit test without a GPU.
//
//   ETH_CUDA_DEVICES set     as it says: one GPU number for every local rank ("0"), or one per
//                            local rank ("0,1,0,1");
//   one visible GPU          that one. Slurm's --gpus-per-task=1 and --gpu-bind, and a per-rank
//                            CUDA_VISIBLE_DEVICES, show each rank its own GPU as device 0; ranks
//                            of a one-GPU machine all see that GPU, and the identity check
//                            (mpi_topology/gpu_identity.hpp) finds them sharing it;
//   several visible GPUs     GPU <node-local rank>, one each (one task per GPU without binding);
//                            fewer GPUs than local ranks is an error.
// Which ranks share a GPU is decided by the GPU's UUID, never by these indices: two ranks that
// each see "device 0" may hold different GPUs.
#pragma once

#include <functional>
#include <string>

namespace eth::kernels {

struct GpuBinding {
  int device = -1;   // CUDA device index among the GPUs this process sees
  std::string how;   // for the log: which rule chose it
};

// For node-local rank `local_rank` of `local_ranks`, seeing `visible` GPUs (at least 1), under
// ETH_CUDA_DEVICES = `setting` (nullptr or "": unset). Throws std::invalid_argument with one
// line saying what was expected.
GpuBinding bind_gpu(const char* setting, int local_rank, int local_ranks, int visible);

// Where the launcher placed this process on its host, read before MPI_Init from the variables
// launchers set: Open MPI (OMPI_COMM_WORLD_LOCAL_RANK, _LOCAL_SIZE), Slurm's srun (SLURM_LOCALID;
// the local size from SLURM_STEP_TASKS_PER_NODE and SLURM_NODEID), MPICH's Hydra
// (MPI_LOCALRANKID, MPI_LOCALNRANKS). local_rank -1: no launcher said.
struct LauncherPlace {
  int local_rank = -1;
  int local_ranks = -1;  // -1: the launcher did not say
  std::string source;    // the variable the local rank came from
};
using Environment = std::function<const char*(const char*)>;
LauncherPlace launcher_place(const Environment& env);

// The number of tasks on node `node` from a Slurm task-count list such as "2(x3),1": node 0..2
// run 2 tasks, node 3 runs 1. -1 when the list is malformed or too short.
int slurm_tasks_on_node(const std::string& list, int node);

}  // namespace eth::kernels

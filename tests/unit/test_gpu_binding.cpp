// Which GPU each rank takes (kernels/gpu_binding.hpp) and which ranks share one
// (mpi_topology/gpu_identity.hpp), over fake device lists and launcher environments: every case
// a real cluster produces, checked without a GPU.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/gpu_binding.hpp"
#include "mpi_topology/gpu_identity.hpp"

namespace eth::test {
namespace {

using kernels::bind_gpu;

// The message of the std::invalid_argument `f` throws; fails the test when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return "";
}

TEST(GpuBinding, OneVisibleGpuPerRankIsUsed) {
  // srun --gpus-per-task=1, --gpu-bind=single:1 or a per-rank CUDA_VISIBLE_DEVICES: each of the
  // node's 8 ranks sees one GPU, as device 0.
  for (int local = 0; local < 8; local++) {
    const kernels::GpuBinding b = bind_gpu(nullptr, local, 8, 1);
    EXPECT_EQ(b.device, 0) << "local rank " << local;
    EXPECT_EQ(b.how, "the one GPU this rank sees");
  }
}

TEST(GpuBinding, SeveralVisibleGpusGoByLocalRank) {
  // One task per GPU without binding: every rank sees the node's 4 GPUs.
  for (int local = 0; local < 4; local++) EXPECT_EQ(bind_gpu(nullptr, local, 4, 4).device, local);
  EXPECT_EQ(bind_gpu("", 2, 3, 8).device, 2);  // more GPUs than ranks: the first ones
  const std::string e = error_of([] { bind_gpu(nullptr, 2, 4, 2); });
  EXPECT_NE(e.find("local rank 2 of 4"), std::string::npos) << e;
  EXPECT_NE(e.find("shows 2 GPUs"), std::string::npos) << e;
}

TEST(GpuBinding, EthCudaDevicesOverrides) {
  EXPECT_EQ(bind_gpu("0", 3, 4, 1).device, 0);        // all share GPU 0
  EXPECT_EQ(bind_gpu("1,0,1,0", 2, 4, 2).device, 1);  // one entry per local rank
  EXPECT_EQ(bind_gpu("1", 0, 1, 4).how, "ETH_CUDA_DEVICES");
  EXPECT_NE(error_of([] { bind_gpu("0,1", 0, 4, 2); }).find("one per local rank (4)"), std::string::npos);
  EXPECT_NE(error_of([] { bind_gpu("2", 0, 1, 2); }).find("a GPU number in [0, 2), got '2'"), std::string::npos);
  EXPECT_NE(error_of([] { bind_gpu("x", 0, 1, 2); }).find("got 'x'"), std::string::npos);
  EXPECT_NE(error_of([] { bind_gpu("-1", 0, 1, 2); }).find("got '-1'"), std::string::npos);
}

// A fake environment: the variables a launcher would set.
kernels::Environment env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(GpuBinding, LauncherPlaceBeforeMpiInit) {
  const kernels::LauncherPlace ompi =
      kernels::launcher_place(env_of({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}));
  EXPECT_EQ(ompi.local_rank, 3);
  EXPECT_EQ(ompi.local_ranks, 4);
  EXPECT_EQ(ompi.source, "OMPI_COMM_WORLD_LOCAL_RANK");

  // srun on the fourth node of "2(x3),1": one task there.
  const kernels::LauncherPlace slurm = kernels::launcher_place(
      env_of({{"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "3"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"}}));
  EXPECT_EQ(slurm.local_rank, 0);
  EXPECT_EQ(slurm.local_ranks, 1);
  EXPECT_EQ(slurm.source, "SLURM_LOCALID");
  const kernels::LauncherPlace slurm_second = kernels::launcher_place(
      env_of({{"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "1"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"}}));
  EXPECT_EQ(slurm_second.local_ranks, 2);

  // Open MPI's variables win over Slurm's (mpirun inside an allocation sets both).
  EXPECT_EQ(kernels::launcher_place(env_of({{"SLURM_LOCALID", "0"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}})).local_rank, 1);

  const kernels::LauncherPlace hydra =
      kernels::launcher_place(env_of({{"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}}));
  EXPECT_EQ(hydra.local_rank, 1);
  EXPECT_EQ(hydra.local_ranks, 2);

  const kernels::LauncherPlace none = kernels::launcher_place(env_of({}));
  EXPECT_EQ(none.local_rank, -1);
  EXPECT_EQ(kernels::launcher_place(env_of({{"OMPI_COMM_WORLD_LOCAL_RANK", "x"}})).local_rank, -1);
  // A local size that contradicts the local rank is treated as unknown.
  EXPECT_EQ(kernels::launcher_place(env_of({{"OMPI_COMM_WORLD_LOCAL_RANK", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}))
                .local_ranks,
            -1);
}

TEST(GpuBinding, SlurmTaskCounts) {
  EXPECT_EQ(kernels::slurm_tasks_on_node("8", 0), 8);
  EXPECT_EQ(kernels::slurm_tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(kernels::slurm_tasks_on_node("2(x3),1", 3), 1);
  EXPECT_EQ(kernels::slurm_tasks_on_node("2(x3),1", 4), -1);  // no such node
  EXPECT_EQ(kernels::slurm_tasks_on_node("2(x3", 0), -1);     // malformed
  EXPECT_EQ(kernels::slurm_tasks_on_node("", 0), -1);
}

const std::string kGpuA = "GPU-6f3c1a2e-0000-1111-2222-333344445555";
const std::string kGpuB = "GPU-0b9d7e44-aaaa-bbbb-cccc-ddddeeeeffff";

TEST(GpuIdentity, SharingIsDecidedByUuidNotIndex) {
  // Two nodes of two ranks; under --gpus-per-task each rank's GPU is "device 0", but the UUIDs
  // differ: NCCL can run.
  const std::vector<int> nodes = {0, 0, 1, 1};
  EXPECT_EQ(nccl_obstacle(nodes, {{"n0", kGpuA}, {"n0", kGpuB}, {"n1", kGpuA}, {"n1", kGpuB}}), "");
  // The same UUID on two nodes is two GPUs' worth of fake data, but not sharing inside a node.
  EXPECT_EQ(nccl_obstacle({0, 1}, {{"n0", kGpuA}, {"n1", kGpuA}}), "");
  // Two ranks of node 1 on one GPU (ETH_CUDA_DEVICES=0 on a one-GPU host, or a wrong bind).
  const std::string shared = nccl_obstacle(nodes, {{"n0", kGpuA}, {"n0", kGpuB}, {"n1", kGpuA}, {"n1", kGpuA}});
  EXPECT_EQ(shared, "rank 3 on n1 and rank 2 on n1 of the same node share GPU " + kGpuA);
  // A rank without a GPU.
  EXPECT_EQ(nccl_obstacle({0, 0}, {{"n0", kGpuA}, {"n0", ""}}), "rank 1 on n0 computes on the CPU");
}

}  // namespace
}  // namespace eth::test

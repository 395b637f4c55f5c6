// The GPU ops' launch workspace (kernels/workspace.hpp) in the interpreter: reserved as eth_train
// reserves it (Backend::reserve_workspace), it holds a whole training step of a stage (forward,
// loss, backward, the gradient norm, AdamW) on the fp32 GPU ops and on the bf16 kernels: no op
// asks for more scratch (HostLaunch would throw), nothing is allocated during the step, and every
// matmul (the fused ones included) runs on the GPU ops, none on the host backend. At
// this shape (tiny-hs64, B 5, T 64: N = 320 rows, three 128-row chunks) the largest request is
// the column sums of fc's bias gradient, (3, 4C) float pairs, which the fp32 matmul backward
// makes: leaving that term out of launch_scratch_bytes fails the fp32 test. At tiny shapes the
// sum of squares' 8200 bytes is the largest, which the MPI tests on cuda-emulated exercise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/emulated/cuda_emulated_backend.hpp"
#include "kernels/gpu_ops/scratch.hpp"
#include "kernels/workspace.hpp"
#include "lib/base/random.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/model_tensors.hpp"
#include "lib/model/optimizer.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"

namespace eth::test {
namespace {

constexpr int B = 5, T = 64;

// `gemm`: the library call each of the step's matmuls makes in the interpreter.
void expect_step_within_reserve(std::unique_ptr<kernels::Backend> backend, kernels::emulated::HostLaunch& launch,
                                const std::string& gemm) {
  const ModelConfig model = load_model_config("inputs/models/tiny-hs64.yaml");
  Stage stage(model, LayerRange{0, model.num_layers}, B, T, 1, *backend);
  std::vector<float> params(stage.layout().size());
  init_parameters(model, stage.layout(), 1, params.data());
  backend->copy_to_device(stage.params(), params.data(), params.size() * sizeof(float));
  stage.params_written();
  const AdamWConfig adamw;
  AdamW optimizer(stage.layout(), adamw, *backend);
  const kernels::StageShape shape = stage_shape(model, {0, model.num_layers}, B, T, 0);
  const size_t before = backend->allocated_bytes();
  backend->reserve_workspace(shape);
  const size_t reserved = backend->allocated_bytes() - before;
  EXPECT_GE(reserved, kernels::gpu_ops::launch_workspace_bytes(shape, kernels::OpsDevice::interpreter));

  launch.reset_counts();
  std::vector<int32_t> tokens(static_cast<size_t>(B) * T), targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); i++) {
    tokens[i] = static_cast<int32_t>(uniform_at(11, i) * model.vocab_size);
    targets[i] = static_cast<int32_t>(uniform_at(12, i) * model.vocab_size);
  }
  stage.zero_grads();
  stage.forward(0, tokens.data(), nullptr);
  stage.loss(0, targets.data(), 1.0f);
  const double loss = stage.take_loss_sum() / B;
  stage.backward(0, nullptr);
  const double grad_norm = std::sqrt(backend->sum_of_squares(stage.grads(), stage.layout().size())) / B;
  optimizer.step(stage.params(), stage.param_copies(), stage.grads(), 3e-4f,
                 static_cast<float>(clip_factor(grad_norm, adamw.max_grad_norm) / B));
  backend->synchronize();
  EXPECT_TRUE(std::isfinite(loss) && std::isfinite(grad_norm)) << loss << " " << grad_norm;
  EXPECT_EQ(backend->allocated_bytes() - before, reserved) << backend->name() << ": the step allocated";
  EXPECT_EQ(backend->peak_allocated_bytes(), backend->allocated_bytes()) << backend->name() << ": the step allocated";
  // Every matmul of the step ran on the GPU ops, the fused ones included (none left for the host
  // backend under the emulated one): 4 per layer forward, 8 backward, and the head's 3.
  const auto calls = launch.library_counts().find(gemm);
  ASSERT_NE(calls, launch.library_counts().end()) << gemm;
  EXPECT_EQ(calls->second.calls, 12u * model.num_layers + 3) << gemm;
}

TEST(LaunchWorkspace, TheShapeMakesFcsBiasColumnSumsTheLargestRequest) {
  const ModelConfig model = load_model_config("inputs/models/tiny-hs64.yaml");
  const size_t N = size_t{B} * T, C = static_cast<size_t>(model.channels);
  const kernels::StageShape shape = stage_shape(model, {0, model.num_layers}, B, T, 0);
  EXPECT_EQ(kernels::gpu_ops::launch_scratch_bytes(shape), kernels::gpu_ops::column_sums_scratch_bytes(N, 4 * C));
  EXPECT_GT(kernels::gpu_ops::launch_scratch_bytes(shape), kernels::gpu_ops::sum_of_squares_scratch_bytes());
  // What the memory model adds on each device: the scratch in the interpreter; on a GPU also
  // cuBLASLt's workspace and the bound on CUB's sort storage; nothing on the host.
  const size_t held = kernels::gpu_ops::launch_scratch_bytes(shape);
  EXPECT_EQ(kernels::gpu_ops::launch_workspace_bytes(shape, kernels::OpsDevice::interpreter), held);
  EXPECT_EQ(kernels::gpu_ops::launch_workspace_bytes(shape, kernels::OpsDevice::cuda),
            held + kernels::kCublasWorkspaceBytes + kernels::sort_storage_bound(N));
  EXPECT_EQ(kernels::gpu_ops::launch_workspace_bytes(shape, kernels::OpsDevice::host), 0u);
}

TEST(LaunchWorkspace, HoldsAStepOfTheFp32GpuOps) {
  std::unique_ptr<kernels::Backend> backend = kernels::make_cuda_emulated_backend();
  kernels::emulated::HostLaunch& launch = *kernels::cuda_emulated_launch(*backend);
  expect_step_within_reserve(std::move(backend), launch, "cublas_sgemm");
}

TEST(LaunchWorkspace, HoldsAStepOfTheBf16Kernels) {
  std::unique_ptr<kernels::Backend> backend =
      kernels::make_cuda_emulated_backend(0, kernels::own_arithmetic_path(kernels::Precision::bf16));
  kernels::emulated::HostLaunch& launch = *kernels::cuda_emulated_launch(*backend);
  expect_step_within_reserve(std::move(backend), launch, "cublaslt_matmul_bf16");
}

}  // namespace
}  // namespace eth::test

// GoogleTest driver of the CUDA-vs-CPU checks (cuda_checks.hpp): one test per check, each
// skipped with a message where no GPU is usable (CI, this project's build machines).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_probe.hpp"
#include "tests/gpu/cuda_checks.hpp"

namespace eth::test::gpu {
namespace {

class CudaVsCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaVsCpu, Matches) {
  std::string why;
  if (kernels::usable_cuda_devices(&why) == 0) GTEST_SKIP() << "no usable GPU (" << why << "): nothing to check";
  const std::unique_ptr<kernels::Backend> gpu = kernels::make_cuda_backend(0);
  const std::unique_ptr<kernels::Backend> cpu = kernels::make_cpu_backend();
  for (const Check& check : all_checks()) {
    if (check.name != GetParam()) continue;
    for (const Comparison& c : check.run(Backends{*gpu, *cpu, 0})) EXPECT_TRUE(c.passed()) << c.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(Op, CudaVsCpu, ::testing::ValuesIn(check_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace eth::test::gpu

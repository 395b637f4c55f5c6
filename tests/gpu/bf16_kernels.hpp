// The bf16 kernels of kernels/gpu_ops/*_bf16.hpp run on one side, on the same inputs:
// bf16_kernels_gpu.cu on the GPU (CudaLaunch: cuBLASLt, the hardware's mma.sync), and
// bf16_kernels_host.cpp in the kernel interpreter (HostLaunch), which CI checks against the CPU
// twin and float64 (tests/unit/test_gpu_*_bf16_interpreted.cpp). bf16_kernel_check compares the two.
#pragma once

#include <string>
#include <vector>

namespace eth::test::bf16_kernels {

// One output of one kernel call, widened to double; `bf16` says how it was stored.
struct Output {
  std::string name;
  bool bf16;
  std::vector<double> values;
};

std::vector<Output> run_on_gpu();
std::vector<Output> run_in_interpreter();

}  // namespace eth::test::bf16_kernels

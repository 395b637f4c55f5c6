// The 16-bit kernels of kernels/gpu_ops/*_bf16.hpp, at bf16 and at fp16, run on one side, on the
// same inputs: kernels16_gpu.cu on the GPU (CudaLaunch: cuBLASLt, the hardware's mma.sync),
// and kernels16_host.cpp in the kernel interpreter (HostLaunch), which CI checks against the
// CPU twin and float64 (tests/unit/test_gpu_*16_interpreted.cpp). kernel16_check compares
// the two.
#pragma once

#include <string>
#include <vector>

namespace eth::test::bf16_kernels {

// One output of one kernel call, widened to double; `type` says how it was stored: "bf16",
// "fp16" or "fp32". For an fp32 output of a GEMM, `magnitude` holds each element's sum of the
// absolute values of its terms (the initial value, the bias, every product) and `terms` their
// number, from which kernel16_check bounds the element's error; empty for the others.
struct Output {
  std::string name;
  std::string type;
  std::vector<double> values;
  std::vector<double> magnitude = {};
  int terms = 0;
};

std::vector<Output> run_on_gpu();
std::vector<Output> run_in_interpreter();

}  // namespace eth::test::bf16_kernels

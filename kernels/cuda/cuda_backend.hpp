// The CUDA backend: custom kernels plus cuBLAS(Lt) for the matmuls, fp32 or bf16 storage. Compiled only
// when nvcc is found (ETH_HAVE_CUDA); plain C++ so host code and tests can include it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kernels/backend.hpp"

namespace eth::kernels {

struct CudaBackendOptions {
  // What it computes in (kernels/precision.hpp):
  //   fp32  cuBLAS sgemm with TF32 math off: it matches the CPU twin to ~1e-6;
  //   tf32  cuBLAS rounds the GEMMs' inputs to TF32 (unit roundoff 2^-11): relative errors ~1e-3;
  //   bf16  bf16 tensors on the bf16 kernels (kernels/gpu_ops/gpu_ops_backend.hpp): compute
  //         capability 8.0 and later; a GPU without bf16 units runs bf16 as the twin over fp32;
  //   fp16  fp16 tensors on the fp16 kernels (bf16's, at fp16): compute capability 7.0 and
  //         later (V100, T4), where 7.x runs attention on the twin (no mma.m16n8k16).
  Precision precision = Precision::fp32;
};
// A backend computing on CUDA device `device`, on its own stream. Every call is made from one
// host thread; copy_to_host, sum_of_squares and release synchronise with the stream, the other
// calls only enqueue work. Throws std::runtime_error (file, line, CUDA's message) on any failure.
std::unique_ptr<Backend> make_cuda_backend(int device, CudaBackendOptions options = {});

// The custom kernels a backend made by make_cuda_backend has launched, by name (its ops' library
// calls not included); empty for any other backend.
std::map<std::string, uint64_t> cuda_kernel_launches(const Backend& backend);

}  // namespace eth::kernels

// The CUDA backend: custom kernels plus cuBLAS(Lt) for the matmuls, fp32, bf16 or fp16 storage.
// Compiled only when nvcc is found (ETH_HAVE_CUDA); plain C++ so host code and tests can include it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kernels/backend.hpp"

namespace eth::kernels {

// A backend computing on CUDA device `device`, on its own stream, on the precision path it is
// made for (kernels/precision.hpp):
//   fp32  cuBLAS sgemm with TF32 math off: it matches the CPU twin to ~1e-6;
//   tf32  cuBLAS rounds the GEMMs' inputs to TF32 (unit roundoff 2^-11): relative errors ~1e-3;
//   bf16, fp16 in their arithmetic: 16-bit tensors on the 16-bit kernels
//         (kernels/gpu_ops/gpu_ops_backend.hpp; fp16 on compute capability 7.x runs attention on
//         the twin, no mma.m16n8k16).
// A 16-bit path in fp32 arithmetic is the twin's over the fp32 backend (kernels/twin_backend.hpp).
// Every call is made from one host thread; copy_to_host, sum_of_squares and release synchronise
// with the stream, the other calls only enqueue work. Throws std::runtime_error (file, line,
// CUDA's message) on any failure, std::invalid_argument where the GPU's compute capability is
// below what the path's arithmetic needs (kernels/cuda_capability.hpp).
std::unique_ptr<Backend> make_cuda_backend(int device, const PrecisionPath& path = {});

// The custom kernels a backend made by make_cuda_backend has launched, by name (its ops' library
// calls not included); empty for any other backend.
std::map<std::string, uint64_t> cuda_kernel_launches(const Backend& backend);

}  // namespace eth::kernels

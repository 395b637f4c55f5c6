// The CUDA backend: custom kernels plus cuBLAS for the matmuls, fp32 storage. Compiled only
// when nvcc is found (ETH_HAVE_CUDA); plain C++ so host code and tests can include it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kernels/backend.hpp"

namespace eth::kernels {

struct CudaBackendOptions {
  // TF32 tensor-core math for cuBLAS GEMMs (matmuls and attention's products). Off by default:
  // fp32 then matches the CPU twin to ~1e-6; with TF32 the inputs of each product are rounded
  // to 10 mantissa bits (unit roundoff 2^-11), so expect relative errors of ~1e-3.
  bool tf32 = false;
};

// A backend computing on CUDA device `device`, on its own stream. Every call is made from one
// host thread; copy_to_host, sum_of_squares and release synchronise with the stream, the other
// calls only enqueue work. Throws std::runtime_error (file, line, CUDA's message) on any failure.
std::unique_ptr<Backend> make_cuda_backend(int device, CudaBackendOptions options = {});

// The custom kernels a backend made by make_cuda_backend has launched, by name (its ops' library
// calls not included); empty for any other backend.
std::map<std::string, uint64_t> cuda_kernel_launches(const Backend& backend);

}  // namespace eth::kernels

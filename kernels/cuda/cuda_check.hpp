// One checking macro per library, naming file and line: every CUDA runtime and cuBLAS call of
// the CUDA backend goes through them. A failure throws std::runtime_error, which eth_train turns
// into one line and an MPI_Abort (a device error is never something a user's input caused).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace eth::kernels::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw std::runtime_error(std::string("CUDA error at ") + file + ":" + std::to_string(line) + ": " + call +
                           ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw std::runtime_error(std::string("cuBLAS error at ") + file + ":" + std::to_string(line) + ": " + call +
                           ": " + cublasGetStatusName(status) + ": " + cublasGetStatusString(status));
}

}  // namespace eth::kernels::cuda

#define CUDA_CHECK(call)                                                                      \
  do {                                                                                        \
    const cudaError_t eth_cuda_err_ = (call);                                                 \
    if (eth_cuda_err_ != cudaSuccess)                                                         \
      ::eth::kernels::cuda::throw_cuda_error(eth_cuda_err_, #call, __FILE__, __LINE__);       \
  } while (0)

#define CUBLAS_CHECK(call)                                                                    \
  do {                                                                                        \
    const cublasStatus_t eth_cublas_status_ = (call);                                         \
    if (eth_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                          \
      ::eth::kernels::cuda::throw_cublas_error(eth_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After every kernel launch: a bad configuration shows here, a fault at the next synchronisation.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

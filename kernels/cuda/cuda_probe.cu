#include <cuda_runtime.h>

#include "kernels/cuda/cuda_probe.hpp"

namespace eth::kernels {

int usable_cuda_devices(std::string* why) {
  int count = 0;
  // Without a GPU or driver this returns an error code (insufficient driver, no device): it
  // never crashes, so it is the one question to ask before choosing a backend.
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    *why = cudaGetErrorString(err);
    return 0;
  }
  if (count == 0) *why = "no CUDA device";
  return count;
}

CudaDeviceProps cuda_device_props(int device) {
  cudaDeviceProp prop{};
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return {};
  if (cudaGetDeviceProperties(&prop, device % count) != cudaSuccess) return {};
  return {prop.name, static_cast<double>(prop.totalGlobalMem)};
}

}  // namespace eth::kernels

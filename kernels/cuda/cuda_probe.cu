#include <cuda_runtime.h>

#include <cstdio>

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
  CudaDeviceProps props{prop.name, static_cast<double>(prop.totalGlobalMem), "", "", prop.major * 10 + prop.minor};
  // The UUID's 16 bytes in nvidia-smi's grouping: 4-2-2-2-6.
  const auto* b = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
  char uuid[64];
  std::snprintf(uuid, sizeof(uuid), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  props.uuid = uuid;
  char bus[32] = "";
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device % count) == cudaSuccess) props.pci_bus_id = bus;
  return props;
}

bool set_cuda_device(int device) { return cudaSetDevice(device) == cudaSuccess; }

}  // namespace eth::kernels

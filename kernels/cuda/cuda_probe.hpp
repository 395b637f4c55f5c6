// Whether this process can use a GPU, asked once at start-up. Compiled only when nvcc is found.
#pragma once

#include <string>

namespace eth::kernels {

// Number of CUDA devices this process can use; 0 with the runtime's reason in *why otherwise.
int usable_cuda_devices(std::string* why);

struct CudaDeviceProps {
  std::string name;
  double memory_bytes = 0;
  std::string uuid;        // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi -L prints it
  std::string pci_bus_id;  // "0000:41:00.0"
  int compute_capability = 0;  // major * 10 + minor: 80 for an A100, 70 for a V100
};
CudaDeviceProps cuda_device_props(int device);

// Makes `device` current for this thread (cudaSetDevice); false if CUDA refused.
bool set_cuda_device(int device);

}  // namespace eth::kernels

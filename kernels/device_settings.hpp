// What the environment says about the process's device, read once by the program (app/
// environment.hpp: ETH_BACKEND, ETH_BF16_KERNELS, ETH_CUDA_DEVICES, ETH_CPU_DEVICE_MEMORY and
// the launcher's variables) and handed to what needs it: nothing under kernels/ reads the
// environment. Empty strings are unset variables; each is checked where it is used, in one line
// naming the variable (std::invalid_argument).
#pragma once

#include <string>

#include "kernels/gpu_binding.hpp"

namespace eth::kernels {

struct DeviceSettings {
  std::string backend;            // ETH_BACKEND (backend_select.hpp)
  std::string bf16_kernels;       // ETH_BF16_KERNELS: "1" (default) or "0"
  std::string cuda_devices;       // ETH_CUDA_DEVICES (gpu_binding.hpp)
  std::string cpu_device_memory;  // ETH_CPU_DEVICE_MEMORY: bytes the CPU backend acts as a device of (testing)
  LauncherPlace launcher;         // where the launcher put this process (gpu_binding.hpp), before MPI_Init
};

}  // namespace eth::kernels

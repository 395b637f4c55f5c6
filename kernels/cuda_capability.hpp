// Which compute capability runs which of the CUDA backend's kernels: the one table that the
// backend (kernels/cuda/cuda_backend.cu) and backend selection (kernels/backend_select.cpp) read.
// Capabilities are written major * 10 + minor, as cuda_device_props gives them: 80 for an A100.
#pragma once

#include <string>

#include "kernels/precision.hpp"

namespace eth::kernels {

// mma.sync m16n8k16 and cp.async, which the flash attention kernels are made of: Ampere on.
inline constexpr int kMma16816Capability = 80;

// The least capability whose GPU computes in `arithmetic`: bf16 (cuBLASLt's bf16 GEMMs, the
// flash kernels) and TF32 from 8.0; fp16 from 7.0 (its GEMMs on Volta's tensor cores; attention
// on 7.x takes the twin, since it lacks mma.m16n8k16); fp32 on every GPU.
inline int capability_for(Arithmetic arithmetic) {
  switch (arithmetic) {
    case Arithmetic::bf16:
    case Arithmetic::tf32: return 80;
    case Arithmetic::fp16: return 70;
    case Arithmetic::fp32: break;
  }
  return 0;
}

// "8.0" for 80.
inline std::string capability_name(int capability) {
  return std::to_string(capability / 10) + "." + std::to_string(capability % 10);
}

}  // namespace eth::kernels

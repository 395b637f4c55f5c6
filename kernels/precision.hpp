// The arithmetic a job computes in (--precision), one setting for every rank. What each value
// stores and where it accumulates is the mixed-precision rule of docs/design.md; which backend
// delivers it on which device is select_backend's choice (kernels/backend_select.hpp).
#pragma once

#include <string>

#include "kernels/tensor.hpp"

namespace eth::kernels {

enum class Precision {
  automatic,  // bf16 on a GPU, fp32 on the CPU: resolved by select_backend
  fp32,       // fp32 storage and fp32 arithmetic throughout
  tf32,       // fp32 storage; GEMM inputs rounded to TF32 on tensor cores (GPUs from A100 on)
  bf16,       // fp32 master state; bf16 parameter copies, activations and activation gradients
};

// "auto", "fp32", "tf32", "bf16"; throws std::invalid_argument naming the values it expects.
Precision parse_precision(const std::string& text);
const char* precision_name(Precision precision);
// The element type a path stores its activations, their gradients and its parameter copies in
// (Tensor): bf16 on the bf16 path, fp32 on the others. `precision` is resolved (not automatic).
ElementType storage_type(Precision precision);

}  // namespace eth::kernels

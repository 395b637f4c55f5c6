// bf16 mixed precision by rounding: wraps any fp32 backend and rounds, fp32 -> bf16 -> fp32 to
// nearest even, at exactly the points where a bf16 device path stores bf16 (docs/design.md,
// "Precision"). Everything in between is the inner backend's fp32 arithmetic, and every buffer
// stays float32 holding bf16-representable values where the rule says bf16.
//
// Over the CPU backend this is the bf16 CPU twin: the reference that CI trains with and that
// the CUDA bf16 kernels are checked against. Over the CUDA fp32 backend it is the path of GPUs
// without bf16 units (V100, T4): fp32 compute, the same numbers as the twin, so devices of old
// and new generations can share one bf16 job.
//
//   bf16 (rounded here)                          fp32 (passed through)
//   every parameter a kernel reads, as its       master parameters, AdamW moments, parameter
//     bf16 copy (rounded into scratch when read)   gradients (accumulated, summed across ranks)
//   encoder, layernorm, matmul, attention,       layernorm mean and rstd, attention's saved
//     GELU and residual outputs; the logits        statistics (lse, or probabilities on the
//   activation gradients: matmul's dinp,           materialised path), losses, sums of squares
//     layernorm's accumulated dinp, attention's
//     dqkv, GELU's dinp, the dlogits
#pragma once

#include <memory>

#include "kernels/backend.hpp"

namespace eth::kernels {

// `inner` must compute in fp32 (precision() == fp32).
std::unique_ptr<Backend> make_bf16_rounding_backend(std::unique_ptr<Backend> inner);

}  // namespace eth::kernels

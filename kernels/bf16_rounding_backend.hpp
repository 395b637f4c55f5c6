// bf16 mixed precision on fp32 arithmetic: wraps any fp32 backend, stores bf16 where the bf16
// path stores it (docs/design.md, "Precision") and computes every op in the inner backend's fp32.
// Each op widens its bf16 inputs (exactly) into fp32 working copies, runs the fp32 op, and
// narrows its outputs to bf16, rounding to nearest even: the numbers of a bf16 kernel that loads
// bf16, computes in fp32 and stores bf16.
//
// Over the CPU backend this is the bf16 CPU twin: the reference that CI trains with and that
// the CUDA bf16 kernels are checked against. Over the CUDA fp32 backend it is the path of GPUs
// without bf16 units (V100, T4): fp32 compute on the same bf16 storage and the same numbers as
// the twin, so devices of old and new generations can share one bf16 job.
//
//   bf16 (Tensors of the bf16 path)              fp32 (float* on every path)
//   encoder, layernorm, matmul, attention,       master parameters, AdamW moments, parameter
//     GELU and residual outputs; the logits        gradients (accumulated, summed across ranks)
//   activation gradients: matmul's dinp,         layernorm mean and rstd, attention's saved
//     layernorm's accumulated dinp, attention's    statistics (lse, or probabilities on the
//     dqkv, GELU's dinp, the dlogits                materialised path), losses, sums of squares
//   every parameter a kernel reads, as its bf16
//     copy: a master given as fp32 is rounded when read (the numbers of a copy refreshed by
//     each optimizer step, without tracking which rank's step or shard's broadcast wrote it)
//
// A Tensor given as fp32 is taken as holding bf16 values and rounded in place when written, so
// that a caller may also keep bf16 values in fp32 buffers (the same numbers, twice the bytes).
//
// On a device with bf16 kernels (Bf16Compute::kernels) the GEMMs, the flash attention, the
// layernorm backward and the classifier run on them, on the bf16 tensors as stored, with bf16
// copies of the parameters they read; every other op (and every op on an fp32 Tensor) takes the
// fp32-compute path above.
//
// The working copies live in one workspace: bf16_rounding_workspace_bytes is its size for a GPT
// stage, reserved at start-up (reserve_workspace) and counted by the memory model; an op that
// needs more (generation's attention_decode, say) grows it.
#pragma once

#include <cstddef>
#include <memory>

#include "kernels/backend.hpp"

namespace eth::kernels {

// How the bf16 path computes: every op in fp32 on the inner backend (the CPU twin; GPUs without
// bf16 units), or on the inner device's bf16 kernels (kernels/bf16_kernels.hpp) where it has
// them for the op, the rest in fp32 as before.
enum class Bf16Compute { fp32, kernels };

// `inner` must compute in fp32 (precision() == fp32).
std::unique_ptr<Backend> make_bf16_rounding_backend(std::unique_ptr<Backend> inner,
                                                    Bf16Compute compute = Bf16Compute::fp32);

// The working copies a training step of such a stage's GPT-2 ops takes (kernels/workspace.hpp).
size_t bf16_rounding_workspace_bytes(const StageShape& shape, Bf16Compute compute);

}  // namespace eth::kernels

// The twin: 16-bit mixed precision (bf16 or fp16 storage) on fp32 arithmetic. A plain backend over
// any fp32 one: it stores bf16 or fp16 where the 16-bit paths store (docs/design.md, "Precision")
// and computes every op in the inner backend's fp32. Each op widens its 16-bit inputs (exactly)
// into fp32 working copies, runs the fp32 op, and narrows its outputs to the storage type,
// rounding to nearest even (fp16: values past 65504 to infinity, subnormals kept, as the hardware
// converts): the numbers of a kernel that loads 16 bits, computes in fp32 and stores 16 bits.
//
// Over the CPU backend this is the CPU's bf16 and fp16 path: the reference that CI trains with
// and that the GPU's 16-bit kernels are checked against. Over the CUDA fp32 backend it is the
// path of GPUs without the format's units (bf16 on a V100 or a T4): fp32 compute on the same
// storage and the same numbers as the CPU's, so devices of old and new generations can share one
// job. A GPU backend with 16-bit kernels takes bf16 or fp16 tensors itself
// (kernels/gpu_ops/gpu_ops_backend.hpp) and keeps a twin over itself (make_twin_fallback) for the
// few shapes its kernels do not take.
//
//   16-bit (Tensors of the path)                 fp32 (float* on every path)
//   encoder, layernorm, matmul, attention,       master parameters, AdamW moments, parameter
//     GELU and residual outputs; the logits        gradients (accumulated, summed across ranks)
//   activation gradients: matmul's dinp,         layernorm mean and rstd, attention's saved
//     layernorm's accumulated dinp, attention's    statistics (lse, or probabilities on the
//     dqkv, GELU's dinp, the dlogits                materialised path), losses, sums of squares
//   every parameter a kernel reads, as its 16-bit
//     copy (the embedding's fp32 masters rounded when read: which rows are read is known on the
//     device only)
//
// A Tensor given as fp32 is taken as holding values of the storage type and rounded in place when
// written, so that a caller may also keep them in fp32 buffers (the same numbers, twice the bytes).
//
// The working copies live in one workspace: twin_workspace_bytes is its size for a GPT stage,
// reserved at start-up (reserve_workspace) and counted by the memory model; an op that needs
// more (generation's attention_decode, say) grows it.
#pragma once

#include <cstddef>
#include <memory>

#include "kernels/backend.hpp"

namespace eth::kernels {

// The head sizes (C / NH) the 16-bit flash attention kernels (bf16 and fp16) are compiled for; at
// any other a native 16-bit backend computes attention on its twin.
constexpr bool flash_attention_head_size(int head_size) { return head_size == 64 || head_size == 128; }

// The widths (pre_gelu's columns) at which GELU and its gradient fuse into a bf16 GEMM's
// epilogue: cuBLASLt takes the aux matrix's leading dimension in multiples of 8. At others a
// native bf16 backend runs the fused op on its twin (the same numbers).
constexpr bool gelu_epilogue_width(int columns) { return columns % 8 == 0; }

// The twin of `precision` (bf16 or fp16) over `inner`, which computes in fp32.
std::unique_ptr<Backend> make_twin_backend(std::unique_ptr<Backend> inner, Precision precision);

// A twin over a native 16-bit backend (of inner.precision()), not owned, for the ops it falls back
// on: it hands `inner` fp32 tensors, which inner computes on its fp32 kernels. Destroy it before
// inner's memory.
std::unique_ptr<Backend> make_twin_fallback(Backend& inner);

// The working copies a training step of such a stage's GPT-2 ops takes (kernels/workspace.hpp):
// arithmetic fp32, the twin computing every op; bf16 or fp16, a native backend's fallbacks.
size_t twin_workspace_bytes(const StageShape& shape, Arithmetic arithmetic);

}  // namespace eth::kernels

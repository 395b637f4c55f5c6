// The workspace a backend holds for its ops, beside the buffers its callers allocate, through the
// steps of one pipeline stage: reserved once at start-up (Backend::reserve_workspace), so that
// no step allocates device memory, and counted by the memory model (lib/plan/memory_model) with
// the formulas the reservation uses:
//
//   the bf16 path's working copies  twin_workspace_bytes (kernels/twin_backend.hpp): the
//                                   twin's fp32 operands; the bf16 kernels' fallbacks' ones
//   the GPU ops' launch workspace   gpu_ops::launch_workspace_bytes (kernels/gpu_ops/scratch.hpp):
//                                   the largest op's launch.scratch; on a GPU
//                                   also cuBLASLt's workspace and CUB's storage for the embedding's
//                                   sort (the constants below)
#pragma once

#include <cstddef>

#include "kernels/attention_heads.hpp"

namespace eth::kernels {

// A pipeline stage's shapes, as far as the workspace goes (lib/model/model_tensors.hpp's
// stage_shape makes one from a model): micro-batches of B samples of T tokens, C channels,
// attention's heads, the MLP's widths, Vp padded vocabulary; the embedding and the head on it or
// not; `gathered_rows`: the rows of one more embedding backward, of rows gathered from the tied
// group (lib/runtime/late_embedding_rows.hpp), 0 where none.
struct StageShape {
  int B, T, C;
  AttentionHeads heads;
  int fc;      // the MLP's first matmul's outputs: 4C (GELU), or gate and up side by side (SwiGLU)
  int fc_act;  // its activation's outputs, the second matmul's inputs: 4C, or FC
  bool swiglu;
  int Vp;
  bool embedding, head;
  size_t gathered_rows;
};

// Where a backend's ops run: the CPU backend's loops (no launch workspace), the GPU ops in the
// kernel interpreter (cuda-emulated), or the GPU ops on a GPU.
enum class OpsDevice { host, interpreter, cuda };

// cuBLASLt's workspace on a GPU (kernels/cuda/cuda_launch.cu), which cuBLAS shares: 32 MiB,
// cuBLASLt's recommendation for Hopper.
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;
// A bound on CUB's temporary storage for a stable radix sort of n (int32, int32) pairs: its
// alternate key and value buffers (8 n bytes, cub/device/dispatch/dispatch_radix_sort.cuh), and
// for its histograms and look-back state (a few counters per radix digit and tile) 4 n bytes
// plus 2 MiB, a margin read off that source and not yet checked on a GPU: the CUDA launch asks
// CUB at start-up and stops with an error if CUB wants more.
inline size_t sort_storage_bound(size_t n) { return 12 * n + (size_t{2} << 20); }

}  // namespace eth::kernels

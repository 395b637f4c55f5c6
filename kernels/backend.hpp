// The one kernel interface: every GPT-2 operation of a pipeline stage, forward and backward,
// on raw buffers with explicit shapes. The CPU backend (kernels/cpu) is the reference twin of
// every device kernel; lib/ talks only to this interface and never knows which backend runs.
//
// Each operation, its shapes and its contract: kernels/backend_ops.hpp, the list of them.
//
// Conventions:
//   - Every operation is enqueued on the compute stream (kernels/device.hpp: the execution
//     model, memory and events); only sum_of_squares waits for its result.
//   - Buffers live where the backend computes (host memory for the CPU). Those of the precision
//     path's element type are Tensor / ConstTensor (kernels/tensor.hpp): the activations, their
//     gradients and the parameter copies the kernels read. The rest are float32 on every path:
//     master parameters' gradients, layernorm's mean and rstd, attention's saved statistics,
//     losses (and one double accumulator).
//   - Parameter gradients ACCUMULATE (+=); they are zeroed once per optimizer step.
//   - Activation gradients are OVERWRITTEN (=), except layernorm_backward's dinp, which
//     accumulates so that the residual stream's gradient needs no separate add.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/adamw_segments.hpp"
#include "kernels/attention_heads.hpp"
#include "kernels/attention_path.hpp"
#include "kernels/backend_ops.hpp"
#include "kernels/bf16.hpp"
#include "kernels/device.hpp"
#include "kernels/precision.hpp"
#include "kernels/tensor.hpp"
#include "kernels/workspace.hpp"

namespace eth::kernels {

struct AdamWParams {
  float lr;
  float beta1;
  float beta2;
  float eps;
  float weight_decay;  // decoupled: p -= lr * weight_decay * p, in the segments that decay
  float grad_scale;    // applied to every gradient first (1/global_batch times the clip factor)
  int step;            // 1-based, for bias correction
};

class Backend : public Device {
 public:
  // ---- precision -------------------------------------------------------------------------
  // What this backend computes in (never automatic), and the path that delivers it, one phrase
  // for the start-up table: "fp32", "bf16 (CPU twin: fp32 compute, ...)".
  virtual Precision precision() const = 0;
  virtual std::string precision_path() const = 0;
  // The element type of its Tensors: the activations, their gradients and the parameter copies.
  ElementType storage() const { return storage_type(precision()); }
  // What its GEMMs multiply in (the precision path's arithmetic, kernels/precision.hpp): bf16
  // where the bf16 path runs on bf16 kernels; fp32 on the bf16 twin, which computes bf16 in fp32
  // (kernels/twin_backend.hpp). The memory model counts the twin's fp32 working copies.
  virtual Arithmetic arithmetic() const = 0;
  // Allocates now the workspace that the ops of a step of such a stage take (kernels/workspace.hpp:
  // the bf16 path's working copies, the GPU ops' launch workspace), so that no step allocates;
  // none on the CPU backend.
  virtual void reserve_workspace(const StageShape& shape) { (void)shape; }
  // Where the ops run, which decides the launch workspace (kernels/workspace.hpp).
  virtual OpsDevice ops_device() const { return OpsDevice::host; }

  // Which kernel attention runs at this T (kernels/attention_path.hpp), which decides what
  // attention_forward keeps for backward in `saved`:
  //   blocked (FlashAttention-2): lse (B, NH, T), each row's log-sum-exp of its scaled scores
  //     q.k/sqrt(hs); backward recomputes the probabilities tile by tile from q, k and lse;
  //   materialised: the softmax probabilities (B, NH, T, T), which backward reads back.
  virtual AttentionPath attention_path(int T) const = 0;
  size_t attention_saved_floats(int B, int NH, int T) const {
    return kernels::attention_saved_floats(attention_path(T), static_cast<size_t>(B), static_cast<size_t>(NH),
                                           static_cast<size_t>(T));
  }

  // ---- the operations (kernels/backend_ops.hpp: each one's shapes and contract) ---------------
#define ETH_DECLARE_OP(ret, name, params, args) virtual ret name params = 0;
  ETH_BACKEND_OPS(ETH_DECLARE_OP)
#undef ETH_DECLARE_OP
  // Two ops in one pass; by default the two ops they fuse (kernels/backend.cpp).
#define ETH_DECLARE_FUSED_OP(ret, name, params, args) virtual ret name params;
  ETH_FUSED_BACKEND_OPS(ETH_DECLARE_FUSED_OP)
#undef ETH_DECLARE_FUSED_OP
};

// The CPU backend: OpenBLAS sgemm and OpenMP loops, each operation run before the call returns;
// attention materialised below kCpuMaterialisedBelowT, blocked from it on (cpu_attention_path).
// device_memory_bytes > 0 (testing, ETH_CPU_DEVICE_MEMORY): it behaves as a device of that many
// bytes, reporting what is left as free and refusing an allocation past it, as cudaMalloc would.
std::unique_ptr<Backend> make_cpu_backend(size_t device_memory_bytes = 0);
// The CPU backend in asynchronous mode: operations queued and run in order on a worker thread,
// so that a missing event wait in the caller shows up on the CPU as a wrong result.
std::unique_ptr<Backend> make_async_cpu_backend(size_t device_memory_bytes = 0);

}  // namespace eth::kernels

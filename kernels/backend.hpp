// The one kernel interface: every GPT-2 operation of a pipeline stage, forward and backward,
// on raw buffers with explicit shapes. The CPU backend (kernels/cpu) is the reference twin of
// every device kernel; lib/ talks only to this interface and never knows which backend runs.
//
// Dimension names, the same everywhere:
//   B  micro-batch size (samples)       T  sequence length
//   C  channels                          NH attention heads
//   V  vocabulary size                   Vp vocabulary padded for alignment (>= V)
//   N  rows = B * T                      OC output channels of a matmul
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
#include "kernels/attention_path.hpp"
#include "kernels/bf16.hpp"
#include "kernels/device.hpp"
#include "kernels/precision.hpp"
#include "kernels/tensor.hpp"
#include "kernels/workspace.hpp"

namespace eth::kernels {

class Bf16Kernels;  // kernels/bf16_kernels.hpp

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
  // An fp32 backend's native bf16 kernels (kernels/bf16_kernels.hpp), which the bf16 path runs
  // where it can; null where the device has none (it then computes bf16 in fp32).
  virtual Bf16Kernels* bf16_kernels() { return nullptr; }
  // Whether this backend's bf16 path runs native bf16 kernels (for the memory model: the
  // fp32-compute path holds fp32 working copies of its operands).
  virtual bool runs_bf16_kernels() const { return false; }
  // Allocates now the workspace that the ops of a step of such a stage take (kernels/workspace.hpp:
  // the bf16 path's working copies, the GPU ops' launch workspace), so that no step allocates;
  // none on the CPU backend.
  virtual void reserve_workspace(const StageShape& shape) { (void)shape; }
  // Where the ops run, which decides the launch workspace (kernels/workspace.hpp).
  virtual OpsDevice ops_device() const { return OpsDevice::host; }
  // out = inp rounded to the nearest bf16 value, ties to even, held in fp32 (n); out may be inp.
  // NaN stays NaN, infinities stay, finite values past bf16's largest become infinite.
  virtual void round_to_bf16(float* out, const float* inp, size_t n) = 0;
  // out = inp in out's element type (n elements): fp32 -> bf16 rounds as round_to_bf16 does,
  // bf16 -> fp32 is exact, a type to itself copies. out and inp do not overlap.
  virtual void convert(Tensor out, ConstTensor inp, size_t n) = 0;

  // ---- GPT-2 forward and backward --------------------------------------------------------
  virtual void encoder_forward(Tensor out,            // (B, T, C)
                               const int32_t* tokens,  // (B, T)
                               ConstTensor wte,       // (Vp, C)
                               ConstTensor wpe,       // (maxT, C)
                               int B, int T, int C) = 0;
  // Either gradient may be null: it is then left out (the runtime adds a step's last word
  // embedding rows late, lib/runtime/late_embedding_rows.hpp).
  virtual void encoder_backward(float* dwte,            // (Vp, C) accumulated, or null
                                float* dwpe,            // (maxT, C) accumulated, or null
                                ConstTensor dout,       // (B, T, C)
                                const int32_t* tokens,  // (B, T)
                                int B, int T, int C) = 0;

  virtual void layernorm_forward(Tensor out,          // (N, C)
                                 float* mean,         // (N)
                                 float* rstd,         // (N)
                                 ConstTensor inp,     // (N, C)
                                 ConstTensor weight, ConstTensor bias,  // (C)
                                 int N, int C) = 0;
  virtual void layernorm_backward(Tensor dinp,         // (N, C) accumulated
                                  float* dweight, float* dbias,  // (C) accumulated
                                  ConstTensor dout,    // (N, C)
                                  ConstTensor inp,     // (N, C)
                                  ConstTensor weight,  // (C)
                                  const float* mean, const float* rstd,  // (N)
                                  int N, int C) = 0;

  // out = inp @ weight^T + bias
  virtual void matmul_forward(Tensor out,          // (N, OC)
                              ConstTensor inp,     // (N, C)
                              ConstTensor weight,  // (OC, C)
                              ConstTensor bias,    // (OC) or nullptr
                              int N, int C, int OC) = 0;
  virtual void matmul_backward(Tensor dinp,          // (N, C) overwritten
                               float* dweight,       // (OC, C) accumulated
                               float* dbias,         // (OC) accumulated, or nullptr
                               ConstTensor dout,     // (N, OC)
                               ConstTensor inp,      // (N, C)
                               ConstTensor weight,   // (OC, C)
                               int N, int C, int OC) = 0;

  // Causal self-attention; qkv holds q, k, v side by side per token. What forward keeps for
  // backward in `saved` depends on the kernel the backend runs at this T (attention_path):
  //   blocked (FlashAttention-2): lse (B, NH, T), each row's log-sum-exp of its scaled scores
  //     q.k/sqrt(hs); backward recomputes the probabilities tile by tile from q, k and lse;
  //   materialised: the softmax probabilities (B, NH, T, T), which backward reads back.
  // The caller allocates attention_saved_floats(B, NH, T) floats for it.
  virtual AttentionPath attention_path(int T) const = 0;
  size_t attention_saved_floats(int B, int NH, int T) const {
    return kernels::attention_saved_floats(attention_path(T), static_cast<size_t>(B), static_cast<size_t>(NH),
                                           static_cast<size_t>(T));
  }
  virtual void attention_forward(Tensor out,        // (B, T, C)
                                 float* saved,      // attention_saved_floats(B, NH, T)
                                 ConstTensor qkv,   // (B, T, 3C)
                                 int B, int T, int C, int NH) = 0;
  virtual void attention_backward(Tensor dqkv,        // (B, T, 3C) overwritten
                                  ConstTensor dout,   // (B, T, C)
                                  ConstTensor qkv,    // (B, T, 3C)
                                  ConstTensor out,    // (B, T, C) forward's
                                  const float* saved, // forward's
                                  int B, int T, int C, int NH) = 0;

  // Incremental (decoding) attention: Tn new positions [T0, T0 + Tn) of each sample against
  // the keys and values of every earlier position, kept in a cache. First writes the new rows'
  // keys and values, taken from qkv_new, into the caches at [T0, T0 + Tn); then new row i (at
  // position T0 + i) attends causally to cached positions [0, T0 + i]. The caches hold positions
  // [0, T0) from earlier calls; T0 + Tn <= Tmax. Keeps nothing for backward (inference only).
  // With T0 = 0 and Tn = T it computes what attention_forward does.
  virtual void attention_decode(Tensor out,            // (B, Tn, C)
                                Tensor k_cache,        // (B, NH, Tmax, hs), hs = C / NH
                                Tensor v_cache,        // (B, NH, Tmax, hs)
                                ConstTensor qkv_new,   // (B, Tn, 3C)
                                int B, int Tn, int T0, int Tmax, int C, int NH) = 0;

  // GELU, tanh approximation (GPT-2's).
  virtual void gelu_forward(Tensor out, ConstTensor inp, size_t n) = 0;  // (n)
  virtual void gelu_backward(Tensor dinp, ConstTensor inp, ConstTensor dout, size_t n) = 0;

  virtual void residual_forward(Tensor out, ConstTensor a, ConstTensor b, size_t n) = 0;

  // ---- two ops in one pass -----------------------------------------------------------------
  // Where a backend has no fused kernel they run as the two ops they fuse (these defaults): the
  // same numbers in fp32. On the bf16 path the fused form rounds once less, where the fused
  // kernel does (kernels/bf16_rounding_backend.hpp).
  //
  // The fc matmul with GELU in its epilogue: pre_gelu = inp @ weight^T + bias, out = GELU of
  // that sum, taken before pre_gelu is stored (so on the bf16 path from the unrounded fp32 sum).
  virtual void matmul_gelu_forward(Tensor out,          // (N, OC)
                                   Tensor pre_gelu,     // (N, OC), kept for matmul_dgelu_backward
                                   ConstTensor inp,     // (N, C)
                                   ConstTensor weight,  // (OC, C)
                                   ConstTensor bias,    // (OC) or nullptr
                                   int N, int C, int OC) {
    matmul_forward(pre_gelu, inp, weight, bias, N, C, OC);
    gelu_forward(out, pre_gelu, static_cast<size_t>(N) * OC);
  }
  // matmul_backward of a matmul whose input is GELU(pre_gelu), taken on through GELU's backward:
  // dpre_gelu = gelu'(pre_gelu) * (dout @ weight), from the matmul's sum before it is stored.
  virtual void matmul_dgelu_backward(Tensor dpre_gelu,      // (N, C) overwritten
                                     float* dweight,        // (OC, C) accumulated
                                     float* dbias,          // (OC) accumulated, or nullptr
                                     ConstTensor dout,      // (N, OC)
                                     ConstTensor inp,       // (N, C) = GELU(pre_gelu)
                                     ConstTensor weight,    // (OC, C)
                                     ConstTensor pre_gelu,  // (N, C)
                                     int N, int C, int OC) {
    matmul_backward(dpre_gelu, dweight, dbias, dout, inp, weight, N, C, OC);
    gelu_backward(dpre_gelu, pre_gelu, dpre_gelu, static_cast<size_t>(N) * C);
  }
  // The residual add and the layernorm after it: residual = a + b, out = layernorm(residual) of
  // the residual as stored (so the same numbers fused or not, on every path).
  virtual void residual_layernorm_forward(Tensor residual,   // (N, C)
                                          Tensor out,        // (N, C)
                                          float* mean,       // (N)
                                          float* rstd,       // (N)
                                          ConstTensor a,     // (N, C)
                                          ConstTensor b,     // (N, C)
                                          ConstTensor weight, ConstTensor bias,  // (C)
                                          int N, int C) {
    residual_forward(residual, a, b, static_cast<size_t>(N) * C);
    layernorm_forward(out, mean, rstd, residual, weight, bias, N, C);
  }

  // Fused softmax + cross-entropy over the first V of Vp logits. Writes each sample's loss,
  // the mean over its T tokens. When dlogits_scale != 0 it then overwrites logits with
  // dlogits = dlogits_scale * (softmax - onehot(target)) / T (zero in the padded columns);
  // with 0 the logits are left untouched (evaluation). Probabilities are never stored.
  virtual void crossentropy_forward_backward(float* sample_losses,    // (B)
                                             Tensor logits,           // (B, T, Vp)
                                             const int32_t* targets,  // (B, T)
                                             int B, int T, int V, int Vp,
                                             float dlogits_scale) = 0;

  // *total += the sum of x, in double, in index order: per-sample losses summed on the device,
  // so that the host reads one number per step.
  virtual void accumulate_sum(double* total,   // (1)
                              const float* x,  // (n)
                              size_t n) = 0;

  // ---- optimizer -------------------------------------------------------------------------
  // Waits for queued work and returns the sum of x^2, accumulated in double.
  virtual double sum_of_squares(const float* x, size_t n) = 0;
  // AdamW over a rank's parameters in one launch: the `count` segments of `segments` (a table
  // in this device's memory, kernels/adamw_segments.hpp) say which parameters it updates and
  // where their moments lie. param_copies, where given (the bf16 path: the copies the kernels
  // read, (params' size)), gets each updated parameter rounded to bf16 in the same pass.
  virtual void adamw_update(float* params, bf16* param_copies, const float* grads, float* m, float* v,
                            const AdamWSegment* segments, size_t count, const AdamWParams& hp) = 0;
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

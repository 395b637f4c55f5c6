// The GPU backend's ops, written once: which kernels of the dialect (kernels/simt/simt.hpp) each
// Backend operation launches, with which grid, block and shared memory, and which library calls
// (GEMM, sort) it makes. Each op is a template over the Launch that runs it:
//
//   CudaLaunch (kernels/cuda/cuda_launch.cuh)      enqueues on the CUDA backend's stream
//   HostLaunch (kernels/emulated/host_launch.hpp)  runs in the kernel interpreter, on host memory
//
// so that ETH_BACKEND=cuda-emulated checks in CI the very launches the GPU runs. A Launch has
//
//   launch.kernel(k, shape)             run kernel k (a struct of the dialect) on LaunchShape shape
//   launch.scratch(bytes)               device memory for an op's intermediates, 256-byte aligned,
//                                       valid until the next op; its content is undefined
//   launch.gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)
//                                       cuBLAS sgemm's contract: column-major, fp32 in and out,
//                                       fp32 accumulation
//   launch.gemm16(g)                    one cuBLASLt matmul (kernels/gpu_ops/gemm16.hpp): bf16
//                                       or fp16 A and B, D of their type or fp32 (fp32 may
//                                       accumulate), fp32 accumulation, a fused epilogue (bias, GELU keeping the
//                                       pre-activation, dGELU, the bias gradient of B)
//   launch.sort_pairs(keys_in, keys_out, values_in, values_out, n)
//                                       a stable sort of int32 (key, value) pairs by key (CUB's
//                                       DeviceRadixSort::SortPairs over all 32 bits)
//   launch.read_back(host, src, bytes)  waits for queued work, then copies device -> host
//
// Shapes and the accumulate/overwrite conventions are those of kernels/backend.hpp. Each family's
// definitions are in the header named in its comment; kernels/cuda/<family>.cu instantiates
// them for CudaLaunch, the emulated backend for HostLaunch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/adamw_segments.hpp"
#include "kernels/attention_heads.hpp"
#include "kernels/bf16.hpp"

namespace eth::kernels::gpu_ops {

// The families below marked "E" run on every stored element type, E = float, bf16 or fp16 (one
// kernel source each; fp32 parameters are masters, read as the 16-bit path's copies when E is).
// encoder.hpp (E)
template <class Launch, class E>
void encoder_forward(Launch& launch, E* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                     int C);
template <class Launch, class E>
void encoder_backward(Launch& launch, float* dwte, float* dwpe, const E* dout, const int32_t* tokens, int B, int T,
                      int C);

// layernorm.hpp (forward: E)
template <class Launch, class E>
void layernorm_forward(Launch& launch, E* out, float* mean, float* rstd, const E* inp, const E* weight,
                       const E* bias, int N, int C);
template <class Launch>
void layernorm_backward(Launch& launch, float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd, int N, int C);

// matmul.hpp
template <class Launch>
void matmul_forward(Launch& launch, float* out, const float* inp, const float* weight, const float* bias, int N,
                    int C, int OC);
template <class Launch>
void matmul_backward(Launch& launch, float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int N, int C, int OC);

// matmul16.hpp (E = bf16 or fp16): forward with pre_gelu keeps the GELU's input and outputs
// GELU of it; backward with pre_gelu (inp = GELU(pre_gelu)) outputs the gradient of pre_gelu in dinp
template <class Launch, class E>
void matmul_forward16(Launch& launch, E* out, E* pre_gelu, const E* inp, const E* weight, const E* bias, int N,
                         int C, int OC);
template <class Launch, class E>
void matmul_backward16(Launch& launch, E* dinp, float* dweight, float* dbias, const E* dout, const E* inp,
                          const E* weight, const E* pre_gelu, int N, int C, int OC);

// attention.hpp (heads as kernels/attention_heads.hpp lays them out, grouped-query included)
template <class Launch>
void attention_forward(Launch& launch, float* out, float* lse, const float* qkv, int B, int T, AttentionHeads heads);
template <class Launch>
void attention_backward(Launch& launch, float* dqkv, const float* dout, const float* qkv, const float* out,
                        const float* lse, int B, int T, AttentionHeads heads);

// attention_decode.hpp
template <class Launch>
void attention_decode(Launch& launch, float* out, float* k_cache, float* v_cache, const float* qkv_new, int B, int Tn,
                      int T0, int Tmax, AttentionHeads heads);

// flash_attention16.hpp (E = bf16 or fp16; mma.sync: compute capability 8.0 and later)
template <class Launch, class E>
void attention_forward16(Launch& launch, E* out, float* lse, const E* qkv, int B, int T, AttentionHeads heads);
template <class Launch, class E>
void attention_backward16(Launch& launch, E* dqkv, const E* dout, const E* qkv, const E* out, const float* lse, int B,
                          int T, AttentionHeads heads);

// elementwise.hpp
template <class Launch, class E>  // E
void gelu_forward(Launch& launch, E* out, const E* inp, size_t n);
template <class Launch, class E>  // E
void gelu_backward(Launch& launch, E* dinp, const E* inp, const E* dout, size_t n);
template <class Launch, class E>  // E
void residual_forward(Launch& launch, E* out, const E* a, const E* b, size_t n);
template <class Launch, class E>  // E = bf16 or fp16: out = inp rounded to E, held in fp32
void round_to(Launch& launch, float* out, const float* inp, size_t n);
template <class Launch, class O, class I>  // to bf16 or fp16 rounded to nearest even, to fp32 exact
void convert(Launch& launch, O* out, const I* inp, size_t n);
template <class Launch, class O, class I>  // convert, values past O's range clamped and counted into *saturated
void convert_saturating(Launch& launch, O* out, const I* inp, size_t n, unsigned* saturated);

// layernorm.hpp, RMSNorm (E = float, bf16 or fp16; statistics and dweight fp32)
template <class Launch, class E>
void rmsnorm_forward(Launch& launch, E* out, float* rstd, const E* inp, const E* weight, int N, int C, float eps);
template <class Launch, class E>  // dinp and dweight accumulated
void rmsnorm_backward(Launch& launch, E* dinp, float* dweight, const E* dout, const E* inp, const E* weight,
                      const float* rstd, int N, int C);

// llama_elementwise.hpp
template <class Launch, class E>  // E
void swiglu_forward(Launch& launch, E* out, const E* inp, int N, int FC);
template <class Launch, class E>  // E
void swiglu_backward(Launch& launch, E* dinp, const E* inp, const E* dout, int N, int FC);
template <class Launch, class E>  // E, in place; sign 1 forward, -1 backward
void rotary(Launch& launch, E* qkv, const float* inv_freq, int B, int T, int T0, AttentionHeads heads, float sign);

// crossentropy.hpp
template <class Launch>
void crossentropy_forward_backward(Launch& launch, float* sample_losses, float* logits, const int32_t* targets,
                                   int B, int T, int V, int Vp, float dlogits_scale);

// optimizer.hpp
template <class Launch>
double sum_of_squares(Launch& launch, const float* x, size_t n);  // waits for the result
template <class Launch>
void accumulate_sum(Launch& launch, double* total, const float* x, size_t n);
struct AdamWSettings {
  float lr, beta1, beta2, eps, weight_decay, grad_scale, correction1, correction2;
};
// One launch over the segments; param_copies (E = bf16 or fp16) = E(params) in the same pass, at
// E = float none (param_copies null: the masters are what the kernels read).
template <class Launch, class E>
void adamw_update(Launch& launch, float* params, E* param_copies, const float* grads, float* m, float* v,
                  const AdamWSegment* segments, size_t count, const AdamWSettings& h);

// The fused 16-bit kernels of the stage step, E = bf16 or fp16: activations and parameter copies
// in E, fp32 statistics, gradients and optimizer state; each rounds exactly where the twin
// (kernels/twin_backend.cpp) stores.
// layernorm16.hpp
template <class Launch, class E>  // residual = a + b stored in E, then the layernorm of the stored residual
void fused_residual_layernorm_forward16(Launch& launch, E* residual, E* out, float* mean, float* rstd, const E* a,
                                        const E* b, const E* weight, const E* bias, int N, int C);
template <class Launch, class E>  // residual = a + b stored in E, then the RMSNorm of the stored residual
void fused_residual_rmsnorm_forward16(Launch& launch, E* residual, E* out, float* rstd, const E* a, const E* b,
                                      const E* weight, int N, int C, float eps);
template <class Launch, class E>  // one launch; dinp accumulated in E, dweight and dbias in fp32, deterministic
void layernorm_backward16(Launch& launch, E* dinp, float* dweight, float* dbias, const E* dout, const E* inp,
                          const E* weight, const float* mean, const float* rstd, int N, int C);
// classifier16.hpp
template <class Launch, class E>  // a chunk of rows of the LM head's logits: per-token loss, dlogits in place
void classifier_rows16(Launch& launch, float* token_losses, E* logits, const int32_t* targets, int rows, int V, int Vp,
                       float dlogits_scale_over_T);
template <class Launch>  // sample_losses (B) = the mean of each sample's T token losses
void sample_mean_losses(Launch& launch, float* sample_losses, const float* token_losses, int B, int T);
template <class Launch, class E>  // crossentropy_forward_backward's contract on logits in E: the two above
void crossentropy_forward_backward16(Launch& launch, float* sample_losses, E* logits, const int32_t* targets, int B,
                                     int T, int V, int Vp, float dlogits_scale);

}  // namespace eth::kernels::gpu_ops

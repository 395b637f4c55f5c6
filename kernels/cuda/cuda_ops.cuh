// The CUDA twins of kernels/cpu/gpt_ops.hpp, one family per file: each enqueues its kernels and
// cuBLAS calls on `stream` (the cuBLAS handle is bound to the same stream). Shapes and the
// accumulate/overwrite conventions are those of kernels/backend.hpp.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_common.cuh"

namespace eth::kernels::cuda {

// encoder.cu
void encoder_forward(cudaStream_t stream, float* out, const int32_t* tokens, const float* wte,
                     const float* wpe, int B, int T, int C);
void encoder_backward(cudaStream_t stream, Scratch& scratch, float* dwte, float* dwpe, const float* dout,
                      const int32_t* tokens, int B, int T, int C);

// layernorm.cu
void layernorm_forward(cudaStream_t stream, float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int N, int C);
void layernorm_backward(cudaStream_t stream, Scratch& scratch, float* dinp, float* dweight, float* dbias,
                        const float* dout, const float* inp, const float* weight, const float* mean,
                        const float* rstd, int N, int C);

// matmul.cu
void matmul_forward(cublasHandle_t cublas, cudaStream_t stream, float* out, const float* inp,
                    const float* weight, const float* bias, int N, int C, int OC);
void matmul_backward(cublasHandle_t cublas, cudaStream_t stream, Scratch& scratch, float* dinp,
                     float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC);

// attention.cu
void attention_forward(cudaStream_t stream, float* out, float* lse, const float* qkv, int B, int T, int C,
                       int NH);
void attention_backward(cudaStream_t stream, float* dqkv, const float* dout, const float* qkv, const float* out,
                        const float* lse, int B, int T, int C, int NH);

// attention_decode.cu
void attention_decode(cudaStream_t stream, float* out, float* k_cache, float* v_cache, const float* qkv_new, int B,
                      int Tn, int T0, int Tmax, int C, int NH);

// elementwise.cu
void gelu_forward(cudaStream_t stream, float* out, const float* inp, size_t n);
void gelu_backward(cudaStream_t stream, float* dinp, const float* inp, const float* dout, size_t n);
void residual_forward(cudaStream_t stream, float* out, const float* a, const float* b, size_t n);
void round_to_bf16(cudaStream_t stream, float* out, const float* inp, size_t n);

// crossentropy.cu
void crossentropy_forward_backward(cudaStream_t stream, Scratch& scratch, float* sample_losses,
                                   float* logits, const int32_t* targets, int B, int T, int V, int Vp,
                                   float dlogits_scale);

// optimizer.cu
double sum_of_squares(cudaStream_t stream, Scratch& scratch, const float* x, size_t n);  // synchronises
void accumulate_sum(cudaStream_t stream, double* total, const float* x, size_t n);
void adamw_update(cudaStream_t stream, float* params, const float* grads, float* m, float* v, size_t n,
                  float lr, float beta1, float beta2, float eps, float weight_decay, float grad_scale,
                  float correction1, float correction2);

// elementwise.cu: one thread spinning on the global timer for `ns` (Device::stall)
void stall(long long ns, cudaStream_t stream);

}  // namespace eth::kernels::cuda

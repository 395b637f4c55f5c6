// AdamW over all of a rank's parameters (one flat buffer) in one launch, writing the bf16 copy
// that the GEMMs read in the same pass: the kernel of adamw_update (optimizer.hpp) with its
// copies on, so the fp32 parameters and moments are adamw_update's bit for bit, and each copy
// is the rounded fp32 parameter.
#pragma once

#include "kernels/gpu_ops/ops.hpp"
#include "kernels/gpu_ops/optimizer.hpp"

namespace eth::kernels::gpu_ops {

template <class Launch>
void adamw_update_bf16(Launch& launch, float* params, bf16* param_copies, const float* grads, float* m, float* v,
                       size_t n, float lr, float beta1, float beta2, float eps, float weight_decay, float grad_scale,
                       float correction1, float correction2) {
  if (n == 0) return;
  launch.kernel(AdamWKernel<true>{params, param_copies, grads, m, v, n,
                                  {lr, beta1, beta2, eps, weight_decay, grad_scale, correction1, correction2}},
                LaunchShape{Dim3(grid_for(n, kAdamWThreads)), Dim3(kAdamWThreads), 0});
}

}  // namespace eth::kernels::gpu_ops

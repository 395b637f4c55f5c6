// The model's norm, layernorm (weight and bias, mean and rstd kept) or RMSNorm (weight alone,
// rstd kept), as the config chooses: the block, the stage and the generator call it and never
// ask which.
#pragma once

#include "kernels/backend.hpp"
#include "lib/model/model_config.hpp"

namespace eth {

// A norm's output and the fp32 statistics its backward reads.
struct NormOutput {
  kernels::Tensor out;    // (N, C)
  float* mean = nullptr;  // (N) layernorm only
  float* rstd = nullptr;  // (N)
};

// The norm after a block (the next block's first, or the final one), fused with the block's last
// residual add.
struct NextNorm {
  NormOutput out;
  kernels::ConstTensor weight;  // (C)
  kernels::ConstTensor bias;    // (C), null for RMSNorm
};

class ModelNorm {
 public:
  ModelNorm(kernels::Backend& backend, const ModelConfig& config)
      : backend_(backend), kind_(config.norm), eps_(static_cast<float>(config.norm_eps)), C_(config.channels) {}

  void forward(const NormOutput& out, kernels::ConstTensor inp /* (N, C) */, kernels::ConstTensor weight,
               kernels::ConstTensor bias, int N) const;
  // residual = a + b, out = norm(residual) as stored.
  void residual_forward(kernels::Tensor residual, const NormOutput& out, kernels::ConstTensor a, kernels::ConstTensor b,
                        kernels::ConstTensor weight, kernels::ConstTensor bias, int N) const;
  // dinp (N, C) accumulated; dweight, dbias (C) accumulated (dbias null for RMSNorm). `saved`:
  // the forward's output, of which the statistics are read.
  void backward(kernels::Tensor dinp, float* dweight, float* dbias, kernels::ConstTensor dout, kernels::ConstTensor inp,
                kernels::ConstTensor weight, const NormOutput& saved, int N) const;

 private:
  kernels::Backend& backend_;
  NormKind kind_;
  float eps_;  // RMSNorm's; layernorm's kernels hold GPT-2's 1e-5 (Stage::check_computes)
  int C_;
};

}  // namespace eth

// How much arithmetic training a GPT takes, and how much the job's devices could do: the two
// halves of MFU (model FLOPs utilisation), as llm.c and nanoGPT report it.
#pragma once

#include "lib/model/model_config.hpp"
#include "lib/plan/precision_paths.hpp"
#include "lib/plan/topology.hpp"

namespace eth {

// The parameters N the FLOP count counts: every one except the position embedding wpe (a
// lookup, no matmul), and the tied wte once, with its padded Vp rows, as the LM head matrix it
// is in the head GEMM: L (12 C^2 + 13 C) + Vp C + 2 C.
double flop_parameters(const GptConfig& model);

// Model FLOPs to train on one token (forward and backward) at sequence length T: 6 N + 12 L T C
// (PaLM appendix B, nanoGPT's estimate_mfu). The attention term counts the full T x T score
// matrix, as the kernels' per-head GEMMs compute it (no causal halving). Recomputation is not
// counted: it is work the hardware does, not the model.
double training_flops_per_token(const GptConfig& model, int T);

// FLOP/s the job's devices reach at most: each rank's path peak (PrecisionPath::peak_tflops: bf16
// tensor cores where its device type computes on them, fp32 where bf16 runs in fp32 arithmetic),
// summed over every rank of `topology`, idle ones too: they are part of the job.
double peak_flops(const Topology& topology, const PrecisionPaths& paths);

}  // namespace eth

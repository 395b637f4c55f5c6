// The FLOP count behind MFU (lib/job/model_flops.hpp) against counts done by hand.
#include <gtest/gtest.h>

#include "lib/base/input_error.hpp"
#include "lib/job/model_flops.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/plan/topology.hpp"

namespace eth::test {
namespace {

GptConfig gpt(int V, int Vp, int maxT, int L, int NH, int C) { return {"by hand", V, Vp, maxT, L, NH, C}; }

// tiny.yaml: C = 32, L = 2, Vp = 128. Per layer 12 C^2 + 13 C = 12288 + 416 = 12704; two layers
// 25408; the head (tied wte) 128 * 32 = 4096; the final layernorm 64: N = 29568.
// At T = 16: 6 N = 177408, plus 12 L T C = 12 * 2 * 16 * 32 = 12288: 189696 FLOPs per token.
TEST(ModelFlops, TinyModelByHand) {
  const GptConfig tiny = gpt(97, 128, 16, 2, 2, 32);
  EXPECT_EQ(flop_parameters(tiny), 29568.0);
  EXPECT_EQ(training_flops_per_token(tiny, 16), 189696.0);
  // N is every parameter but the position embedding (maxT C = 512).
  EXPECT_EQ(flop_parameters(tiny), static_cast<double>(ParamLayout(tiny, {0, 2}).size()) - 16 * 32);
}

// GPT-2 124M (Vp = 50304) at T = 1024: N = 12 (12 * 768^2 + 13 * 768) + 50304 * 768 + 2 * 768
// = 85054464 + 38633472 + 1536 = 123689472 (nanoGPT's 123.65M "non-embedding" count, with the
// padded rows); 6 N = 742136832, 12 L T C = 113246208: 855383040 FLOPs per token.
TEST(ModelFlops, Gpt2SmallByHand) {
  const GptConfig gpt2 = gpt(50257, 50304, 1024, 12, 12, 768);
  EXPECT_EQ(flop_parameters(gpt2), 123689472.0);
  EXPECT_EQ(training_flops_per_token(gpt2, 1024), 855383040.0);
}

// The peak is every rank's path peak, idle ranks included: in bf16 (and auto, which is bf16 where
// a device has bf16 units) the A100s' bf16 tensor cores and the V100s' fp32 arithmetic on the
// bf16 bytes; in fp32 both at fp32; in tf32 the job cannot run (the V100s have no TF32).
TEST(ModelFlops, PeakSumsEachRanksPath) {
  const Topology topology = load_topology("inputs/topologies/lab-2node-a100-v100.yaml");  // 4 A100, 4 V100
  EXPECT_DOUBLE_EQ(peak_flops(topology, precision_paths(topology, kernels::Precision::bf16)), (4 * 312 + 4 * 15.7) * 1e12);
  EXPECT_DOUBLE_EQ(peak_flops(topology, precision_paths(topology, kernels::Precision::automatic)),
                   (4 * 312 + 4 * 125) * 1e12);  // auto: the V100s on their fp16 tensor cores
  EXPECT_DOUBLE_EQ(peak_flops(topology, precision_paths(topology, kernels::Precision::fp32)), (4 * 19.5 + 4 * 15.7) * 1e12);
  EXPECT_THROW(precision_paths(topology, kernels::Precision::tf32), InputError);
}

}  // namespace
}  // namespace eth::test

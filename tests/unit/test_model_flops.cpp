// The FLOP count behind MFU (lib/model/model_tensors.hpp, lib/job/model_flops.hpp) against counts
// done by hand.
#include <gtest/gtest.h>

#include "lib/base/input_error.hpp"
#include "lib/job/model_flops.hpp"
#include "lib/model/model_tensors.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/plan/topology.hpp"

namespace eth::test {
namespace {

ModelConfig gpt(int V, int Vp, int maxT, int L, int NH, int C) { return gpt2_config("by hand", V, Vp, maxT, L, NH, C); }

// tiny.yaml: C = 32, L = 2, Vp = 128. Per layer 12 C^2 + 13 C = 12288 + 416 = 12704; two layers
// 25408; the head (tied wte) 128 * 32 = 4096; the final layernorm 64: N = 29568.
// At T = 16: 6 N = 177408, plus 12 L T C = 12 * 2 * 16 * 32 = 12288: 189696 FLOPs per token.
TEST(ModelFlops, TinyModelByHand) {
  const ModelConfig tiny = gpt(97, 128, 16, 2, 2, 32);
  EXPECT_EQ(flop_parameters(tiny), 29568.0);
  EXPECT_EQ(training_flops_per_token(tiny, 16), 189696.0);
  // N is every parameter but the position embedding (maxT C = 512).
  EXPECT_EQ(flop_parameters(tiny), static_cast<double>(ParamLayout(tiny, {0, 2}).size()) - 16 * 32);
}

// GPT-2 124M (Vp = 50304) at T = 1024: N = 12 (12 * 768^2 + 13 * 768) + 50304 * 768 + 2 * 768
// = 85054464 + 38633472 + 1536 = 123689472 (nanoGPT's 123.65M "non-embedding" count, with the
// padded rows); 6 N = 742136832, 12 L T C = 113246208: 855383040 FLOPs per token.
TEST(ModelFlops, Gpt2SmallByHand) {
  const ModelConfig gpt2 = gpt(50257, 50304, 1024, 12, 12, 768);
  EXPECT_EQ(flop_parameters(gpt2), 123689472.0);
  EXPECT_EQ(training_flops_per_token(gpt2, 1024), 855383040.0);
}

// Llama-3-8B (inputs/models/hf/Llama-3-8B/config.json: V = Vp = 128256, C = 4096, L = 32,
// NH = 32, NKV = 8, hs = 128, FC = 14336, untied). Per layer: ln1 4096; qkv (32 + 2 * 8) * 128 =
// 6144 rows of 4096: 25165824; attproj 4096 * 4096 = 16777216; ln2 4096; gate and up
// 2 * 14336 * 4096 = 117440512; down 4096 * 14336 = 58720256: 218112000. 32 layers 6979584000;
// embedding and head 128256 * 4096 = 525336576 each; the final norm 4096: 8030261248 parameters
// (Meta's "8.03B"). N for FLOPs leaves out the embedding: 6979584000 + 4096 + 525336576 =
// 7504924672. At T = 8192: 6 N = 45029548032, plus 12 L T NH hs = 12 * 32 * 8192 * 4096 =
// 12884901888: 57914449920 FLOPs per token.
//
// A tied Llama (SmolLM2-135M: V = Vp = 49152, C = 576, L = 30, NH 9, NKV 3, hs 64, FC 1536) counts
// its embedding once. Per layer: ln1 576; qkv (9 + 6) * 64 = 960 rows of 576: 552960; attproj
// 576 * 576 = 331776; ln2 576; gate and up 2 * 1536 * 576 = 1769472; down 576 * 1536 = 884736:
// 3540096. 30 layers 106202880; wte 49152 * 576 = 28311552; the final norm 576: 134515008
// parameters (the "135M"). N is the same sum (the head is wte, the embedding adds nothing more);
// at T = 2048: 6 N = 807090048, plus 12 L T NH hs = 12 * 30 * 2048 * 576 = 424673280: 1231763328.
TEST(ModelFlops, LlamasByHand) {
  struct Count {
    const char* config;
    size_t layer;
    double params, flop_params;
    int T;
    double flops_per_token;
  };
  for (const Count& c : {Count{"Llama-3-8B", 218112000, 8030261248.0, 7504924672.0, 8192, 57914449920.0},
                         Count{"SmolLM2-135M", 3540096, 134515008.0, 134515008.0, 2048, 1231763328.0}}) {
    const ModelConfig m = load_model_config(std::string("inputs/models/hf/") + c.config + "/config.json");
    EXPECT_EQ(layer_params(m), c.layer) << c.config;
    EXPECT_EQ(model_params(m), c.params) << c.config;
    EXPECT_EQ(flop_parameters(m), c.flop_params) << c.config;
    EXPECT_EQ(training_flops_per_token(m, c.T), c.flops_per_token) << c.config;
  }
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

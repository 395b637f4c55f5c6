// init_checkpoint MODEL OUT.h5 SEED: a step-0 checkpoint of MODEL (a YAML or config.json) holding
// init_parameters' values, for the converters' tests (tests/cli/eth_convert_hf_llama.sh). The
// norm weights and biases, which init_parameters sets to ones and zeros, get small distinct
// offsets so that a test comparing tensors notices two of them swapped; the vocabulary's padded
// rows are zero, as a trained checkpoint's are.
#include <cstdio>
#include <cstdlib>

#include "lib/io/whole_model.hpp"
#include "lib/model/param_layout.hpp"
#include "mpi_topology/mpi_session.hpp"

int main(int argc, char** argv) {
  eth::MpiSession mpi(&argc, &argv, {});
  if (argc != 4) {
    std::fprintf(stderr, "usage: init_checkpoint MODEL OUT.h5 SEED\n");
    return 2;
  }
  const eth::ModelConfig model = eth::load_model_config(argv[1]);
  const eth::ParamLayout layout(model, {0, model.num_layers});
  std::vector<float> whole(layout.size());  // (P)
  eth::init_parameters(model, layout, std::strtoull(argv[3], nullptr, 10), whole.data());
  size_t k = 0;
  for (const eth::ParamTensor& t : layout.tensors()) {
    k++;
    if (t.init == eth::TensorInit::ones || t.init == eth::TensorInit::zeros)
      for (size_t i = 0; i < t.size; i++) whole[t.offset + i] += 1e-3f * static_cast<float>((i + 37 * k) % 101);
    if (t.name == "wte" || t.name == "lm_head_w")  // (Vp, C): rows V.. zero
      for (size_t i = static_cast<size_t>(model.vocab_size) * model.channels; i < t.size; i++) whole[t.offset + i] = 0;
  }
  eth::write_step0_checkpoint(argv[2], model, whole);
  return 0;
}

#include "lib/io/whole_model.hpp"

#include <algorithm>

#include "lib/io/checkpoint.hpp"
#include "lib/io/checkpoint_files.hpp"
#include "lib/model/param_layout.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth {

std::vector<float> read_whole_params(const std::string& checkpoint_path, const ModelConfig& model) {
  CheckpointReader reader(checkpoint_path, model);
  const ParamLayout layout(model, {0, model.num_layers});
  std::vector<float> whole(layout.size());  // (P)
  for (const ParamTensor& t : layout.tensors()) reader.read(CheckpointGroup::params, t, whole.data() + t.offset);
  return whole;
}

void write_step0_checkpoint(const std::string& checkpoint_path, const ModelConfig& model, const std::vector<float>& whole) {
  const ParamLayout layout(model, {0, model.num_layers});
  size_t largest = 0;  // wte for GPT-2; a Llama's MLP matrices may pass it
  for (const ParamTensor& t : layout.tensors()) largest = std::max(largest, t.size);
  const std::vector<float> zeros(largest);
  CheckpointWriter writer(checkpoint_path, model, CheckpointHeader{}, world_comm());
  if (is_rank_zero())
    for (const ParamTensor& t : layout.tensors()) {
      writer.write(CheckpointGroup::params, t, whole.data() + t.offset);
      writer.write(CheckpointGroup::adam_m, t, zeros.data());
      writer.write(CheckpointGroup::adam_v, t, zeros.data());
    }
  writer.finish();
  if (is_rank_zero()) seal_checkpoint(checkpoint_path);
}

bool is_rank_zero() {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(world_comm(), &rank));
  return rank == 0;
}

}  // namespace eth

#include "lib/runtime/rank_runtime.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "mpi_topology/host_messages.hpp"

namespace eth {

std::vector<int> tensor_owners(const ModelConfig& model, const Plan& plan, int world_size) {
  // The names of the tensors each rank holds; an idle rank holds none.
  std::vector<std::set<std::string>> held(static_cast<size_t>(world_size));
  const std::vector<RankRole> roles = rank_roles(plan, world_size);
  for (int r = 0; r < world_size; r++) {
    if (roles[r].idle()) continue;
    const ParamLayout layout(model, plan.pipelines[roles[r].pipeline].stages[roles[r].stage].layers);
    for (const ParamTensor& t : layout.tensors()) held[r].insert(t.name);
  }
  const ParamLayout whole(model, {0, model.num_layers});
  std::vector<int> owners;
  for (const ParamTensor& t : whole.tensors()) {
    int owner = 0;
    while (!held[owner].count(t.name)) owner++;
    owners.push_back(owner);
  }
  return owners;
}

void gather_whole_model(const ParamLayout& whole, const std::vector<int>& owners, int rank,
                        const std::function<void(const ParamTensor&, float*)>& read_mine, float* full) {
  std::vector<float> host;
  for (size_t i = 0; i < whole.tensors().size(); i++) {
    const ParamTensor& t = whole.tensors()[i];
    const int owner = owners[i], tag = static_cast<int>(i);
    if (owner == rank) {
      host.resize(t.size);
      read_mine(t, host.data());
      if (owner == 0) std::copy(host.begin(), host.end(), full + t.offset);
      else send_floats(host.data(), t.size, 0, tag, "send of " + t.name + " to rank 0");
    } else if (rank == 0) {
      recv_floats(full + t.offset, t.size, owner, tag, "receive of " + t.name + " for the whole model");
    }
  }
}

StepResult agreed_step_result(const double (&sums)[kStepSumCount], int global_batch, double loss_scale) {
  StepResult result;
  result.saturated = sums[2];
  result.loss = sums[0] / global_batch;
  result.grad_norm = std::sqrt(sums[1]) / loss_scale / global_batch;
  result.applied = std::isfinite(result.loss) && std::isfinite(result.grad_norm);
  return result;
}

EvalShare evaluation_share(const Plan& plan, int pipeline, int samples) {
  int64_t before = 0;  // samples of the global batch that the pipelines before this one take
  for (int p = 0; p < pipeline; p++) before += plan.pipelines[p].samples();
  const int64_t mine = plan.pipelines[pipeline].samples();
  const int64_t first = samples * before / plan.global_batch, end = samples * (before + mine) / plan.global_batch;
  const int micro_batch = plan.pipelines[pipeline].micro_batch;
  EvalShare share;
  share.first = static_cast<uint64_t>(first);
  share.counted = static_cast<int>(end - first);
  share.micro_batches = (share.counted + micro_batch - 1) / micro_batch;
  return share;
}

}  // namespace eth

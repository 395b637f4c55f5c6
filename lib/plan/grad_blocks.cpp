#include "lib/plan/grad_blocks.hpp"

#include <algorithm>
#include <set>

namespace eth {

LayerRange stage_units(LayerRange layers, int num_layers) {
  return {layers.begin == 0 ? 0 : layers.begin + 1, layers.end == num_layers ? num_layers + 2 : layers.end + 1};
}

std::string units_name(int unit_begin, int unit_end, int num_layers) {
  std::string name;
  auto add = [&](const std::string& part) { name += (name.empty() ? "" : " + ") + part; };
  if (unit_begin == 0) add("embedding");
  const int first = std::max(unit_begin, 1) - 1, end = std::min(unit_end, num_layers + 1) - 1;  // layers [first, end)
  if (end - first == 1) add("layer " + std::to_string(first));
  if (end - first > 1) add("layers " + std::to_string(first) + "-" + std::to_string(end - 1));
  if (unit_end == num_layers + 2) add("final layernorm");
  return name;
}

std::vector<GradBlock> derive_grad_blocks(const Plan& plan, int num_layers) {
  const int units = num_layers + 2;
  // Every stage boundary of every pipeline cuts; between cuts the owners cannot change.
  std::set<int> cuts = {0, units};
  for (const PlanPipeline& pipe : plan.pipelines)
    for (const PlanStage& stage : pipe.stages) cuts.insert(stage_units(stage.layers, num_layers).begin);

  std::vector<GradBlock> blocks;
  for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it) {
    GradBlock block{*it, *std::next(it), {}};
    for (const PlanPipeline& pipe : plan.pipelines) {
      for (const PlanStage& stage : pipe.stages) {
        const LayerRange u = stage_units(stage.layers, num_layers);
        if (u.begin <= block.unit_begin && block.unit_begin < u.end)
          block.owners.insert(block.owners.end(), stage.ranks.begin(), stage.ranks.end());
      }
    }
    std::sort(block.owners.begin(), block.owners.end());
    blocks.push_back(std::move(block));
  }
  return blocks;
}

std::vector<int> tied_embedding_group(const Plan& plan) {
  std::set<int> ranks;
  for (const PlanPipeline& pipe : plan.pipelines) {
    ranks.insert(pipe.stages.front().ranks.begin(), pipe.stages.front().ranks.end());
    ranks.insert(pipe.stages.back().ranks.begin(), pipe.stages.back().ranks.end());
  }
  return {ranks.begin(), ranks.end()};
}

int tied_rows_kept_late(const Plan& plan, int seq_len) {
  int samples = 0;
  for (const PlanPipeline& pipe : plan.pipelines) samples += pipe.rows(pipe.micro_batches - 1);
  return samples * seq_len;
}

bool tied_sum_starts_early(const Plan& plan, const ModelConfig& model, int seq_len) {
  return model.tied_head && tied_embedding_group(plan).size() > 1 && 4 * tied_rows_kept_late(plan, seq_len) <= model.padded_vocab_size;
}

}  // namespace eth
